"""kafka-python pinned to a Kafka version: produce, consume and commit.

Usage: kafka_python_versions.py BOOTSTRAP TOPIC GROUP API_VERSION COUNT

API_VERSION is dotted, e.g. 2.0.0 or 0.10.0. Prints one JSON object:
the offsets the producer was given (or the error class of each failed
send), the records a group consumer read, and the offset it committed.
"""

import json
import sys

from kafka import KafkaConsumer, KafkaProducer, TopicPartition


def main():
    bootstrap, topic, group, version, count = sys.argv[1:6]
    api = tuple(int(x) for x in version.split("."))
    count = int(count)
    out = {"sent": [], "send_errors": [], "consumed": [], "committed": None}
    producer = KafkaProducer(bootstrap_servers=bootstrap, api_version=api, acks="all",
                             retries=0, request_timeout_ms=10000, max_block_ms=10000)
    for i in range(count):
        fut = producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=0)
        try:
            md = fut.get(timeout=20)
            out["sent"].append(md.offset)
        except Exception as e:  # the error class is the result
            out["send_errors"].append(type(e).__name__)
    producer.close(timeout=10)
    if out["send_errors"]:
        print(json.dumps(out))
        return
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, api_version=api, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=20000)
    tp = TopicPartition(topic, 0)
    consumer.subscribe([topic])
    for msg in consumer:
        out["consumed"].append([msg.offset, msg.key.decode(), msg.value.decode()])
        if len(out["consumed"]) == count:
            break
    consumer.commit()
    out["committed"] = consumer.committed(tp)
    consumer.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
