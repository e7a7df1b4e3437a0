#!/usr/bin/env python3
"""The librdkafka half of the chaos workload (confluent-kafka-python).

Usage:
  librdkafka_client.py produce BOOTSTRAP TOPIC PARTITIONS PREFIX RATE
  librdkafka_client.py read BOOTSTRAP TOPIC END0,END1,...

produce runs the safe producer: enable.idempotence (so acks=all and
unbounded retries), an effectively unbounded message timeout, send i
(from 0) to partition i % PARTITIONS with the value
"PREFIX-p<partition>-<i, 8 digits>", RATE sends a second. It writes one
JSON object a line on stdout, flushed at once:

  line                                            | when
  ------------------------------------------------+-----------------------------
  {"t":"ack","s":i,"p":p,"o":offset,"v":value}     | delivery report, no error;
                                                  | offset -1 if not known
  {"t":"fail","s":i,"p":p,"v":value,"err":NAME,    | delivery report with an error
   "code":n,"fatal":b,"retriable":b,"reason":str}  |
  {"t":"fatal","err":NAME,"code":n,"reason":str}   | the producer raised a fatal
                                                  | error; it is replaced
  {"t":"done","sent":n,"unresolved":n,             | on exit
   "producers":n}                                 |

A line "stop SECONDS" on stdin (or stdin closing, as "stop 0") ends the
sends, waits up to SECONDS for every outstanding send to resolve, purges
what is left (reported as _PURGE_QUEUE or _PURGE_INFLIGHT failures, or
_UNRESOLVED if even that brings no delivery report) and exits 0. Every
send gets exactly one ack or fail line before done.

After a fatal error (librdkafka's idempotent producer gives up on a
partition whose sequence it can no longer trust) the old producer is
drained as the librdkafka docs advise (in-flight requests finish, queued
messages fail with _PURGE_QUEUE; at most 10 s), and a new producer, with
a new producer id, carries on from the next send. A send whose produce()
met the fatal error was not queued; the new producer sends it.

read consumes partitions 0..len(ENDS)-1 of TOPIC from the start up to
their END offset (exclusive) with assign() and read_committed, and
writes {"p":p,"o":offset,"v":value} per record, then
{"t":"done","complete":b}. It gives up after 60 s.

Diagnostics (librdkafka's log, non-fatal errors) go to stderr; the
environment variable RDK_DEBUG, if set, is librdkafka's "debug" setting.
"""

import json
import os
import sys
import threading
import time

from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaError,
                             KafkaException, Producer, TopicPartition)

CLIENT_ID = "chaos-librdkafka"


def emit(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def note(msg):
    sys.stderr.write("%s %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


class Stopper:
    """Reads stdin in a thread; stop() is set once "stop N" or EOF arrives."""

    def __init__(self):
        self.event = threading.Event()
        self.timeout = 0.0
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        for line in sys.stdin:
            parts = line.split()
            if parts and parts[0] == "stop":
                self.timeout = float(parts[1]) if len(parts) > 1 else 0.0
                break
        self.event.set()

    def stopped(self):
        return self.event.is_set()


def produce(bootstrap, topic, partitions, prefix, rate):
    stopper = Stopper()
    fatal = []  # fatal errors raised by the current producer, from error_cb

    def on_error(err):
        if err.fatal():
            fatal.append(err)
        else:
            note("error: %s" % err)

    def new_producer():
        conf = {
            "bootstrap.servers": bootstrap,
            "client.id": CLIENT_ID,
            "enable.idempotence": True,
            "acks": "all",
            "retries": 2147483647,
            # Effectively unbounded: a message never times out during a
            # run, so every failure comes from the broker or from purge.
            "message.timeout.ms": 2147483647,
            "linger.ms": 2,
            # The produce request's timeout, as the franz-go producer's.
            "request.timeout.ms": 5000,
            # How long an in-flight request may go unanswered before the
            # connection is closed and the request retried.
            "socket.timeout.ms": 10000,
            "retry.backoff.ms": 100,
            "reconnect.backoff.ms": 100,
            "reconnect.backoff.max.ms": 1000,
            "topic.metadata.refresh.interval.ms": 2000,
            "error_cb": on_error,
        }
        if os.environ.get("RDK_DEBUG"):
            conf["debug"] = os.environ["RDK_DEBUG"]
        return Producer(conf)

    outstanding = {}  # seq -> (partition, value) of sends without an outcome

    def report(seq, p, value, err, msg):
        outstanding.pop(seq, None)
        if err is None:
            # librdkafka knows no offset for a message acknowledged
            # implicitly (a later batch of the partition succeeded after
            # this one's request failed with an uncertain outcome).
            offset = msg.offset()
            emit({"t": "ack", "s": seq, "p": msg.partition(), "o": -1 if offset is None else offset, "v": value})
            return
        emit({"t": "fail", "s": seq, "p": p, "v": value, "err": err.name(), "code": err.code(),
              "fatal": err.fatal(), "retriable": err.retriable(), "reason": err.str()})

    def record_fatal(e):
        """Records the fatal error e carries; re-raises any other error."""
        err = e.args[0] if e.args else None
        if err is None or not (err.fatal() or err.code() == KafkaError._FATAL):
            raise e
        if not fatal:
            fatal.append(err)

    def guarded(call, *args):
        """Runs a producer call and returns its result, or None if it
        raised a fatal error, which is recorded.

        confluent-kafka-python raises the fatal error from poll() and
        flush() as well as from produce(); the main loop then replaces the
        producer."""
        try:
            return call(*args)
        except KafkaException as e:
            record_fatal(e)
            return None

    def drain(producer, timeout):
        """Waits up to timeout for outstanding sends, then purges the rest.

        A send still without a delivery report after that is reported as
        failed with _UNRESOLVED (indefinite: it may be in the log)."""
        deadline = time.monotonic() + timeout
        while outstanding and time.monotonic() < deadline:
            if guarded(producer.flush, max(0.0, deadline - time.monotonic())) is None:
                time.sleep(0.05)
        if outstanding:
            note("%d sends unresolved after %.1fs; purging" % (len(outstanding), timeout))
            guarded(producer.purge, True, True)
            deadline = time.monotonic() + 5
            while outstanding and time.monotonic() < deadline:
                if guarded(producer.flush, max(0.0, deadline - time.monotonic())) is None:
                    time.sleep(0.05)
        left = len(outstanding)
        for seq, (p, value) in sorted(outstanding.items()):
            emit({"t": "fail", "s": seq, "p": p, "v": value, "err": "_UNRESOLVED", "code": 0,
                  "fatal": False, "retriable": False, "reason": "no delivery report from the producer"})
        outstanding.clear()
        return left

    producer = new_producer()
    producers = 1
    unresolved = 0
    interval = 1.0 / rate
    began = time.monotonic()
    seq = 0
    while not stopper.stopped():
        if fatal:
            err = fatal[0]
            emit({"t": "fatal", "err": err.name(), "code": err.code(), "reason": err.str()})
            note("fatal error: %s; draining and replacing the producer" % err)
            # In-flight requests finish; queued messages fail with
            # _PURGE_QUEUE (librdkafka purges them on a fatal error).
            unresolved += drain(producer, 10)
            del fatal[:]
            producer = new_producer()
            producers += 1
            continue
        wait = began + seq * interval - time.monotonic()
        if wait > 0:
            guarded(producer.poll, wait)
            continue
        p = seq % partitions
        value = "%s-p%d-%08d" % (prefix, p, seq)
        try:
            producer.produce(topic, value=value, partition=p,
                             on_delivery=lambda err, msg, s=seq, p=p, v=value: report(s, p, v, err, msg))
        except BufferError:
            guarded(producer.poll, 0.1)
            continue
        except KafkaException as e:
            # A fatal error: the message was not queued; the next
            # producer sends it.
            record_fatal(e)
            continue
        outstanding[seq] = (p, value)
        seq += 1
        guarded(producer.poll, 0)

    unresolved += drain(producer, stopper.timeout)
    emit({"t": "done", "sent": seq, "unresolved": unresolved, "producers": producers})


def read(bootstrap, topic, ends):
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "client.id": CLIENT_ID + "-read",
        "group.id": CLIENT_ID + "-read",
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
        "enable.partition.eof": True,
        "fetch.wait.max.ms": 100,
    })
    todo = {p for p, end in enumerate(ends) if end > 0}
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(todo)])
    deadline = time.monotonic() + 60
    while todo and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        p = msg.partition()
        if msg.error() is not None:
            if msg.error().code() == KafkaError._PARTITION_EOF:
                if msg.offset() >= ends[p]:
                    todo.discard(p)
            else:
                note("read %s-%s: %s" % (topic, p, msg.error()))
            continue
        if msg.offset() < ends[p]:
            emit({"p": p, "o": msg.offset(), "v": msg.value().decode("utf-8", "replace")})
        if msg.offset() + 1 >= ends[p]:
            todo.discard(p)
    consumer.close()
    if todo:
        note("read: partitions %s not read to their end" % sorted(todo))
    emit({"t": "done", "complete": not todo})


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "produce" and len(sys.argv) == 7:
        produce(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], float(sys.argv[6]))
    elif cmd == "read" and len(sys.argv) == 5:
        read(sys.argv[2], sys.argv[3], [int(e) for e in sys.argv[4].split(",")])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
