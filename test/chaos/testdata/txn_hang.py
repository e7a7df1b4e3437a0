#!/usr/bin/env python3
"""A librdkafka transactional producer that stops mid-transaction.

Usage: txn_hang.py BOOTSTRAP TOPIC PARTITIONS TXN_ID TIMEOUT_MS

init_transactions, begin_transaction, one record to every partition,
flush; then prints "open" and sleeps until killed, leaving the
transaction open for the coordinator to time out.
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
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(int(partitions)):
        p.produce(topic, value=("hang-%s-%d" % (txn_id, i)).encode(), partition=i)
    if p.flush(30) != 0:
        print("unflushed", flush=True)
        sys.exit(1)
    print("open", flush=True)
    while True:
        time.sleep(60)


if __name__ == "__main__":
    main()
