#!/usr/bin/env python3
"""Consume-transform-produce with confluent-kafka-python transactions.

Usage: confluent_txn.py BOOTSTRAP IN_TOPIC OUT_TOPIC GROUP TXN_ID COUNT

A read_committed consumer in GROUP reads IN_TOPIC; for each batch a
transactional producer (TXN_ID) begins a transaction, writes "out-" + value
to OUT_TOPIC with the same key, adds the consumer's positions with
send_offsets_to_transaction and commits. Every third transaction before a
batch is a junk transaction: records "junk-N" written to OUT_TOPIC,
flushed, and aborted. Stops after COUNT input records. Prints one JSON object:

  {"commits": n, "aborts": n, "consumed": n, "errors": ["..."]}

The caller checks the output topic; this script only reports.
"""

import json
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


def main():
    bootstrap, topic_in, topic_out, group, txn_id, count = sys.argv[1:7]
    count = int(count)
    errors = []
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
    })
    producer = Producer({
        "bootstrap.servers": bootstrap,
        "transactional.id": txn_id,
        "transaction.timeout.ms": 30000,
        "linger.ms": 5,
    })
    producer.init_transactions(30)
    consumer.subscribe([topic_in])

    commits = aborts = consumed = 0
    junk = 0
    deadline = time.time() + 150
    while consumed < count and time.time() < deadline:
        msgs = consumer.consume(num_messages=200, timeout=1.0)
        msgs = [m for m in msgs if m.error() is None]
        if not msgs:
            continue
        if (commits + aborts) % 3 == 2:
            producer.begin_transaction()
            for _ in range(5):
                producer.produce(topic_out, key=b"junk", value=("junk-%d" % junk).encode())
                junk += 1
            # Flushed first, so the aborted records are in the log (and the
            # partition is in the transaction when the abort is sent).
            producer.flush(30)
            producer.abort_transaction(30)
            aborts += 1
        try:
            producer.begin_transaction()
            for m in msgs:
                producer.produce(topic_out, key=m.key(), value=b"out-" + m.value())
            positions = consumer.position(consumer.assignment())
            producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(30)
            commits += 1
            consumed += len(msgs)
        except KafkaException as e:
            errors.append(str(e))
            break
    if consumed < count and not errors:
        errors.append("consumed %d of %d before the deadline" % (consumed, count))
    consumer.close()
    print(json.dumps({"commits": commits, "aborts": aborts, "consumed": consumed, "errors": errors}))


if __name__ == "__main__":
    main()
