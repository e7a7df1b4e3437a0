package broker

import "samsa/internal/sasl"

// SCRAM mechanism codes of DescribeUserScramCredentials and
// AlterUserScramCredentials (Kafka's ScramMechanism.type()); 0 is UNKNOWN.
const (
	scramMechanismSHA256 int8 = 1
	scramMechanismSHA512 int8 = 2
)

// scramMechanismName returns the SASL name of a mechanism code, or "" for
// a code that names no SCRAM mechanism.
func scramMechanismName(code int8) string {
	switch code {
	case scramMechanismSHA256:
		return sasl.ScramSHA256
	case scramMechanismSHA512:
		return sasl.ScramSHA512
	}
	return ""
}

// scramMechanismCode returns the code of a SASL mechanism name, or 0.
func scramMechanismCode(name string) int8 {
	switch name {
	case sasl.ScramSHA256:
		return scramMechanismSHA256
	case sasl.ScramSHA512:
		return scramMechanismSHA512
	}
	return 0
}
