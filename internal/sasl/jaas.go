package sasl

// Login module classes a JAAS value may name. The broker reads the
// options of these three and loads no code: any other class is refused.
const (
	PlainLoginModule       = plainLoginModule
	ScramLoginModule       = "org.apache.kafka.common.security.scram.ScramLoginModule"
	OAuthBearerLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
)

// ParseJAAS parses one JAAS login module entry,
//
//	org.apache.kafka.common.security.scram.ScramLoginModule required
//	    username="broker" password="broker-secret";
//
// and returns its class and options. The class must be one of
// PlainLoginModule, ScramLoginModule or OAuthBearerLoginModule. Errors
// wrap ErrJAAS and never quote a value (values are often secrets).
func ParseJAAS(s string) (module string, options map[string]string, err error) {
	p := jaasParser{s: s}
	module = p.word()
	switch module {
	case PlainLoginModule, ScramLoginModule, OAuthBearerLoginModule:
	case "":
		return "", nil, p.fail("missing login module class")
	default:
		return "", nil, p.fail("unknown login module class")
	}
	switch flag := p.word(); flag {
	case "required", "requisite", "sufficient", "optional":
	default:
		return "", nil, p.fail("missing or unknown control flag")
	}
	options = make(map[string]string)
	for {
		p.space()
		if p.peek() == ';' {
			p.pos++
			break
		}
		key := p.word()
		if key == "" {
			return "", nil, p.fail("expected option name or ';'")
		}
		p.space()
		if p.peek() != '=' {
			return "", nil, p.fail("expected '=' after option name")
		}
		p.pos++
		p.space()
		val, ok := p.value()
		if !ok {
			return "", nil, p.fail("bad option value")
		}
		if _, dup := options[key]; dup {
			return "", nil, p.fail("option set twice")
		}
		options[key] = val
	}
	p.space()
	if p.pos != len(p.s) {
		return "", nil, p.fail("text after ';' (exactly one login module is allowed)")
	}
	return module, options, nil
}
