// Package config defines samsa's broker, topic and group configs under
// Apache Kafka's names, with Kafka's types and defaults (samsa's own defaults
// differ in a few documented places: node.id 0, loopback listeners, data in
// ./samsa-data, and flush.messages 1 so that acks=all waits for fsync).
//
// Usage:
//
//	b, err := config.Load("server.properties", []string{"num.partitions=3"})
//	if err != nil { ... }          // errors.Is(err, config.ErrUnknownConfig) etc.
//	t, err := b.ResolveTopic(map[string]string{"retention.ms": "3600000"})
//	err = b.ValidateGroup(map[string]string{"consumer.session.timeout.ms": "50000"})
//	g := b.ResolveGroup(overrides) // a group's effective configs (group.go)
//
// A properties file is read as Java reads one:
//
//	+------------------------------+-----------------------------------+
//	| line                         | meaning                           |
//	+------------------------------+-----------------------------------+
//	| # text    or    ! text       | comment                           |
//	| key=value  key: value        | entry; blanks around the          |
//	| key value                    | separator are dropped             |
//	| value ending in odd '\'      | continues on the next line, whose |
//	|                              | leading blanks are dropped        |
//	| \t \n \r \f \uXXXX \<c>      | escapes in keys and values        |
//	+------------------------------+-----------------------------------+
//
// Precedence, highest first: overrides given to Load, the properties file,
// the default. For durations with several forms the most precise set form
// wins: log.retention.ms over log.retention.minutes over
// log.retention.hours; log.roll.ms over log.roll.hours.
//
// Kafka names samsa does not define (kafkacompat.go): those with no
// meaning in samsa (zookeeper.connect, KRaft's metadata log, thread pools)
// are accepted, left out of Raw and listed in one of Broker.Warnings; those
// that would change behaviour (principal.builder.class, ...) are refused
// with ErrUnsupportedConfig unless set to Kafka's default. Listeners named
// in controller.listener.names are dropped from Listeners, with a warning.
// An unknown name's error suggests the name a near miss meant.
//
// Invariants:
//  1. BrokerDefs, TopicDefs and GroupDefs are sorted by name and hold no
//     duplicates; every group config falls back to a broker config.
//  2. Every value in Broker.Raw passed its Def's Check.
//  3. Every error names the config at fault and wraps ErrUnknownConfig,
//     ErrInvalidConfig or ErrUnsupportedConfig.
//  4. No name is both defined and in the inert or refused Kafka lists.
//
// The package has no global state beyond its immutable tables; everything
// is safe for concurrent use.
package config
