#!/usr/bin/env python3
"""A librdkafka transactional producer that stops mid-transaction.

Usage: txn_hang.py BOOTSTRAP TOPIC PARTITIONS TXN_ID TIMEOUT_MS

init_transactions, begin_transaction, one record to every partition
(keyed by its value, so it may go to a compacted topic), flush; then
prints "open" and the offset of each record as PARTITION:OFFSET, space
separated, on one line, and sleeps until killed, leaving the transaction
open for the coordinator to time out.
"""

import sys
import time

from confluent_kafka import Producer


def main():
    bootstrap, topic, partitions, txn_id, timeout_ms = sys.argv[1:6]
    p = Producer({
        "bootstrap.servers": bootstrap,
        "transactional.id": txn_id,
        "transaction.timeout.ms": int(timeout_ms),
    })
    offsets = {}
    failed = []

    def delivered(err, msg):
        if err is not None:
            failed.append(str(err))
        else:
            offsets[msg.partition()] = msg.offset()

    p.init_transactions(30)
    p.begin_transaction()
    for i in range(int(partitions)):
        v = ("hang-%s-%d" % (txn_id, i)).encode()
        p.produce(topic, key=v, value=v, partition=i, on_delivery=delivered)
    if p.flush(30) != 0 or failed or len(offsets) != int(partitions):
        print("unflushed %s" % failed, flush=True)
        sys.exit(1)
    print("open " + " ".join("%d:%d" % (k, offsets[k]) for k in sorted(offsets)), flush=True)
    while True:
        time.sleep(60)


if __name__ == "__main__":
    main()
