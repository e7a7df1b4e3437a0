#!/usr/bin/env python3
"""OAUTHBEARER through confluent-kafka-python (librdkafka) over SASL_SSL.

Usage: confluent_oauth.py BOOTSTRAP CA_FILE TOPIC COUNT

The token comes from the environment: SAMSA_OAUTH_TOKEN (a signed JWT)
and SAMSA_OAUTH_TOKEN_EXP (its exp, seconds since the epoch). oauth_cb
hands it to librdkafka.

COUNT > 0: produces COUNT records (enable.idempotence, acks=all), key and
value "v<i>", then reads the topic in a consumer group until COUNT records
arrived and a quiet second passed. COUNT == 0: produces one record with a
short message.timeout.ms, expecting authentication to fail.

Prints one JSON object on stdout:

  {"delivered": [{"i", "partition", "offset"}...],
   "delivery_errors": ["..."], "unflushed": n,
   "consumed": [{"partition", "offset", "key", "value"}...],
   "errors": ["..."], "token_calls": n}

"errors" are what error_cb reported. The caller checks the result.
"""

import json
import os
import sys
import time

from confluent_kafka import Consumer, Producer


def main():
    bootstrap, ca, topic, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    token = os.environ["SAMSA_OAUTH_TOKEN"]
    expiry = float(os.environ["SAMSA_OAUTH_TOKEN_EXP"])

    calls = [0]
    errors = []

    def oauth_cb(_config):
        calls[0] += 1
        return token, expiry

    def error_cb(err):
        errors.append(str(err))

    conf = {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "OAUTHBEARER",
        "oauth_cb": oauth_cb,
        "error_cb": error_cb,
        "ssl.ca.location": ca,
    }

    delivered, delivery_errors = [], []

    def report(err, msg):
        if err is not None:
            delivery_errors.append(str(err))
            return
        delivered.append({"i": int(msg.key().decode()[1:]), "partition": msg.partition(), "offset": msg.offset()})

    producer = Producer(dict(conf, **{
        "enable.idempotence": True,
        "acks": "all",
        "message.timeout.ms": 30000 if count > 0 else 5000,
    }))
    for i in range(max(count, 1)):
        producer.produce(topic, key="v%d" % i, value="v%d" % i, on_delivery=report)
        producer.poll(0)
    unflushed = producer.flush(45)

    consumed = []
    if count > 0 and not delivery_errors:
        consumer = Consumer(dict(conf, **{
            "group.id": "py-oauth",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }))
        consumer.subscribe([topic])
        deadline = time.time() + 60
        quiet_until = None
        while time.time() < deadline:
            m = consumer.poll(0.5)
            if m is None:
                if quiet_until is not None and time.time() > quiet_until:
                    break
                continue
            if m.error():
                errors.append(str(m.error()))
                continue
            consumed.append({"partition": m.partition(), "offset": m.offset(),
                             "key": m.key().decode(), "value": m.value().decode()})
            if len(consumed) >= count and quiet_until is None:
                # Keep reading for a second: a duplicate would show here.
                quiet_until = time.time() + 1
        consumer.close()

    json.dump({"delivered": delivered, "delivery_errors": delivery_errors, "unflushed": unflushed,
               "consumed": consumed, "errors": errors, "token_calls": calls[0]}, sys.stdout)


if __name__ == "__main__":
    main()
