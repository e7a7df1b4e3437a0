package sasl

import (
	"errors"
	"strings"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	mod, opts, err := ParseJAAS(`org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password='s\"e cret';`)
	if err != nil {
		t.Fatal(err)
	}
	if mod != ScramLoginModule || opts["username"] != "broker" || opts["password"] != `s"e cret` {
		t.Errorf("got %s %v", mod, opts)
	}
	for _, bad := range []string{
		``,
		`com.evil.LoginModule required username="x";`,
		`org.apache.kafka.common.security.scram.ScramLoginModule username="x";`,
		`org.apache.kafka.common.security.scram.ScramLoginModule required username="x"`,
		`org.apache.kafka.common.security.scram.ScramLoginModule required username="x"; other required;`,
		`org.apache.kafka.common.security.scram.ScramLoginModule required username="x" username="y";`,
	} {
		_, _, err := ParseJAAS(bad)
		if !errors.Is(err, ErrJAAS) {
			t.Errorf("%q: %v, want ErrJAAS", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), `"x"`) {
			t.Errorf("%q: error quotes a value: %v", bad, err)
		}
	}
}
