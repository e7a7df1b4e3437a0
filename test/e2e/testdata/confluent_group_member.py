#!/usr/bin/env python3
"""One consumer group member through confluent-kafka-python (librdkafka).

Usage: confluent_group_member.py BOOTSTRAP GROUP TOPIC MAX IDLE_SECONDS

Subscribes to TOPIC as a member of GROUP with auto commit off and
auto.offset.reset=earliest. For each record it "processes" it (records it)
and then commits the record's offset + 1 synchronously, so every record
processed is committed before the next one is read. Stops after MAX records
(0: no limit), or once it has read at least one record and then nothing
for IDLE_SECONDS, or after 60 s without any record; then closes the
consumer, which leaves the group. Prints one JSON object on stdout:

  {"records": [{"partition", "offset", "value"}...],
   "assigned": [[partition...] per assignment callback],
   "errors": ["..."]}

The caller checks the contents; this script only reports what happened.
"""

import json
import sys
import time

from confluent_kafka import Consumer, KafkaError, TopicPartition


def main():
    bootstrap, group, topic = sys.argv[1], sys.argv[2], sys.argv[3]
    limit, idle = int(sys.argv[4]), float(sys.argv[5])

    records, assigned, errors = [], [], []

    def on_assign(consumer, partitions):
        assigned.append(sorted(p.partition for p in partitions))

    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": "e2e-member",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 10000,
        "heartbeat.interval.ms": 500,
    })
    consumer.subscribe([topic], on_assign=on_assign)

    started = time.monotonic()
    last = None
    while True:
        now = time.monotonic()
        if limit and len(records) >= limit:
            break
        if last is not None and now - last >= idle:
            break
        if last is None and now - started >= 60:
            break
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error() is not None:
            if msg.error().code() != KafkaError._PARTITION_EOF:
                errors.append(str(msg.error()))
            continue
        last = time.monotonic()
        records.append({
            "partition": msg.partition(),
            "offset": msg.offset(),
            "value": msg.value().decode(),
        })
        try:
            consumer.commit(offsets=[TopicPartition(topic, msg.partition(), msg.offset() + 1)],
                            asynchronous=False)
        except Exception as e:  # noqa: BLE001 - reported to the caller
            errors.append("commit: %s" % e)

    consumer.close()
    json.dump({"records": records, "assigned": assigned, "errors": errors}, sys.stdout)


if __name__ == "__main__":
    main()
