#!/usr/bin/env python3
"""Round trip through confluent-kafka-python (librdkafka).

Usage: confluent_roundtrip.py BOOTSTRAP TOPIC PARTITIONS COUNT

Produces COUNT keyed records with headers, record i to partition
i % PARTITIONS, with acks=all; flushes and collects delivery reports. Then
a Consumer reads every partition from the beginning with assign() (no
group membership) until it has COUNT records or times out. Prints one JSON
object on stdout:

  {"delivered": [{"i", "partition", "offset"}...],
   "delivery_errors": ["..."], "unflushed": n,
   "consumed": [{"partition", "offset", "key", "value", "headers"}...]}

The caller checks the contents; this script only reports what happened.
"""

import json
import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition, OFFSET_BEGINNING


def main():
    bootstrap, topic, partitions, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

    delivered, errors = [], []

    def report(err, msg):
        if err is not None:
            errors.append(str(err))
            return
        i = int(msg.key().decode().split("-")[1])
        delivered.append({"i": i, "partition": msg.partition(), "offset": msg.offset()})

    producer = Producer({
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "enable.idempotence": False,
        "linger.ms": 5,
        "message.timeout.ms": 30000,
    })
    for i in range(count):
        producer.produce(
            topic,
            key="key-%05d" % i,
            value="value-%05d-%s" % (i, "q" * (i % 50)),
            partition=i % partitions,
            headers=[("idx", str(i).encode()), ("kind", b"e2e"), ("empty", b"")],
            on_delivery=report,
        )
        producer.poll(0)
    unflushed = producer.flush(30)

    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "e2e-assign-only",
        "enable.auto.commit": False,
        "enable.partition.eof": False,
    })
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    consumed = []
    deadline = time.time() + 30
    while len(consumed) < count and time.time() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                continue
            errors.append("consume: " + str(msg.error()))
            continue
        consumed.append({
            "partition": msg.partition(),
            "offset": msg.offset(),
            "key": msg.key().decode() if msg.key() is not None else None,
            "value": msg.value().decode() if msg.value() is not None else None,
            "headers": [[k, v.decode() if v is not None else None] for k, v in (msg.headers() or [])],
        })
    consumer.close()

    json.dump({
        "delivered": delivered,
        "delivery_errors": errors,
        "unflushed": unflushed,
        "consumed": consumed,
    }, sys.stdout)


if __name__ == "__main__":
    main()
