#!/usr/bin/env python3
"""Idempotent produce through confluent-kafka-python (librdkafka).

Usage: confluent_idempotent.py BOOTSTRAP TOPIC PARTITIONS COUNT

Produces COUNT records with enable.idempotence=True (acks=all), record i
to partition i % PARTITIONS with value "p<partition>-<i // PARTITIONS>",
paced to a few thousand records a second so that a broker restart lands
in the middle. Then flushes. Prints "progress <delivered>" lines on
stderr and one JSON object on stdout:

  {"delivered": [{"i", "partition", "offset"}...],
   "delivery_errors": ["..."], "unflushed": n}

The caller checks the log; this script only reports what happened.
"""

import json
import sys
import time

from confluent_kafka import Producer


def main():
    bootstrap, topic, partitions, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

    delivered, errors = [], []

    def report(err, msg):
        if err is not None:
            errors.append(str(err))
            return
        i = int(msg.key().decode())
        delivered.append({"i": i, "partition": msg.partition(), "offset": msg.offset()})
        if len(delivered) % 1000 == 0:
            print("progress %d" % len(delivered), file=sys.stderr, flush=True)

    producer = Producer({
        "bootstrap.servers": bootstrap,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 2,
        "message.timeout.ms": 120000,
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 500,
        "retry.backoff.ms": 50,
    })
    for i in range(count):
        p = i % partitions
        while True:
            try:
                producer.produce(topic, key=str(i), value="p%d-%d" % (p, i // partitions),
                                 partition=p, on_delivery=report)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
        if i % 20 == 19:
            time.sleep(0.005)
    unflushed = producer.flush(120)

    json.dump({
        "delivered": delivered,
        "delivery_errors": errors,
        "unflushed": unflushed,
    }, sys.stdout)


if __name__ == "__main__":
    main()
