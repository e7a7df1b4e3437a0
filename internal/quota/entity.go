package quota

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// Entity types, as AlterClientQuotas and DescribeClientQuotas name them.
const (
	EntityUser     = "user"
	EntityClientID = "client-id"
	EntityIP       = "ip"
)

// DefaultName is how the default entity of a type is printed, as Kafka prints it.
// It is never compared with a name: a Component says whether it is the default.
const DefaultName = "<default>"

// Quota keys (KIP-55, KIP-124, KIP-599, KIP-612).
const (
	KeyProducerByteRate       = "producer_byte_rate"
	KeyConsumerByteRate       = "consumer_byte_rate"
	KeyRequestPercentage      = "request_percentage"
	KeyControllerMutationRate = "controller_mutation_rate"
	KeyConnectionCreationRate = "connection_creation_rate"
)

// Errors returned by NewEntity, Config.Alter and Image.Describe. They are wrapped with the
// offending entity or key; compare with errors.Is. The broker answers all of them with
// INVALID_REQUEST.
var (
	ErrInvalidEntity   = errors.New("quota: invalid entity")
	ErrUnknownKey      = errors.New("quota: unknown quota key")
	ErrInvalidValue    = errors.New("quota: invalid quota value")
	ErrInvalidFilter   = errors.New("quota: invalid describe filter")
	ErrInvalidOverride = errors.New("quota: invalid max.connections.per.ip.overrides")
)

// Component is one part of an Entity: absent (the zero value), a name, or the default
// entity of its type. Components are comparable, so an Entity can key a map.
type Component struct {
	Set     bool   // the entity has this type
	Default bool   // the default entity of this type (<default>); Name is empty
	Name    string // the name, when Set and not Default
}

// Named returns the component for the entity called name.
func Named(name string) Component { return Component{Set: true, Name: name} }

// Default returns the component for the default entity of a type.
func Default() Component { return Component{Set: true, Default: true} }

// String prints the name, <default>, or "" when absent.
func (c Component) String() string {
	if c.Default {
		return DefaultName
	}
	return c.Name
}

// Entity is a quota entity: a user, a client id, a user with a client id, or an ip. Each
// component is a name or the default. Entity is a plain value, safe to copy and to share.
type Entity struct {
	User     Component
	ClientID Component
	IP       Component
}

// String prints the entity as a path in Kafka's style: /users/alice/clients/<default>,
// /clients/app, /ips/10.0.0.1.
func (e Entity) String() string {
	var b strings.Builder
	if e.User.Set {
		b.WriteString("/users/" + e.User.String())
	}
	if e.ClientID.Set {
		b.WriteString("/clients/" + e.ClientID.String())
	}
	if e.IP.Set {
		b.WriteString("/ips/" + e.IP.String())
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}

// EntityComponent is one entity component as it travels in AlterClientQuotas and
// DescribeClientQuotas responses: a type and a name, where a nil name is the default.
type EntityComponent struct {
	Type string
	Name *string
}

// NewEntity builds an Entity from wire components. It fails with ErrInvalidEntity on an
// empty list, an unknown or repeated type, an empty name, an ip combined with user or
// client-id, or an ip name that is not an IP address. An ip name comes back in its
// canonical form (netip.Addr.String).
func NewEntity(comps ...EntityComponent) (Entity, error) {
	var e Entity
	if len(comps) == 0 {
		return e, fmt.Errorf("%w: empty entity", ErrInvalidEntity)
	}
	for _, c := range comps {
		var dst *Component
		switch c.Type {
		case EntityUser:
			dst = &e.User
		case EntityClientID:
			dst = &e.ClientID
		case EntityIP:
			dst = &e.IP
		default:
			return Entity{}, fmt.Errorf("%w: unknown entity type %q", ErrInvalidEntity, c.Type)
		}
		if dst.Set {
			return Entity{}, fmt.Errorf("%w: entity type %q given twice", ErrInvalidEntity, c.Type)
		}
		if c.Name == nil {
			*dst = Default()
		} else {
			*dst = Named(*c.Name)
		}
	}
	if err := validateEntity(e); err != nil {
		return Entity{}, err
	}
	if e.IP.Set && !e.IP.Default {
		// One address, one entity: store and compare the canonical form.
		e.IP.Name = netip.MustParseAddr(e.IP.Name).String()
	}
	return e, nil
}

// Components returns the entity as wire components, user before client-id. The caller owns
// the returned slice.
func (e Entity) Components() []EntityComponent {
	var out []EntityComponent
	add := func(typ string, c Component) {
		if !c.Set {
			return
		}
		ec := EntityComponent{Type: typ}
		if !c.Default {
			n := c.Name
			ec.Name = &n
		}
		out = append(out, ec)
	}
	add(EntityUser, e.User)
	add(EntityClientID, e.ClientID)
	add(EntityIP, e.IP)
	return out
}

// validateEntity applies Kafka's entity rules (ClientQuotaControlManager): at least one
// component; no empty name; ip alone; an ip name must be an address. Kafka also accepts a resolvable host
// name; this package does no IO, so it takes only literal addresses.
func validateEntity(e Entity) error {
	switch {
	case !e.User.Set && !e.ClientID.Set && !e.IP.Set:
		return fmt.Errorf("%w: empty entity", ErrInvalidEntity)
	case e.User.Set && !e.User.Default && e.User.Name == "",
		e.ClientID.Set && !e.ClientID.Default && e.ClientID.Name == "",
		e.IP.Set && !e.IP.Default && e.IP.Name == "":
		return fmt.Errorf("%w: %s: an empty name is not supported (null names the default)", ErrInvalidEntity, e)
	case e.IP.Set && (e.User.Set || e.ClientID.Set):
		return fmt.Errorf("%w: %s: ip must not be combined with user or client-id", ErrInvalidEntity, e)
	case e.IP.Set && !e.IP.Default:
		if _, err := netip.ParseAddr(e.IP.Name); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrInvalidEntity, e, err)
		}
	}
	return nil
}

// Key encodes the entity as the key it is stored under: Kafka's path form
// without the leading slash, each name path-escaped and <default> for the
// default entity of its type (users/alice/clients/<default>, clients/app%2F1,
// ips/10.0.0.1). A name spelled "<default>" is escaped, so it never reads as the
// default. ParseEntityKey reverses it.
func (e Entity) Key() string {
	var parts []string
	add := func(dir string, c Component) {
		if !c.Set {
			return
		}
		name := DefaultName
		if !c.Default {
			name = url.PathEscape(c.Name)
		}
		parts = append(parts, dir, name)
	}
	add("users", e.User)
	add("clients", e.ClientID)
	add("ips", e.IP)
	return strings.Join(parts, "/")
}

// ParseEntityKey decodes a key made by Entity.Key. It fails with
// ErrInvalidEntity on a key of another shape or an entity NewEntity refuses.
func ParseEntityKey(key string) (Entity, error) {
	parts := strings.Split(key, "/")
	if len(parts)%2 != 0 || len(parts) == 0 {
		return Entity{}, fmt.Errorf("%w: key %q", ErrInvalidEntity, key)
	}
	comps := make([]EntityComponent, 0, len(parts)/2)
	for i := 0; i < len(parts); i += 2 {
		var typ string
		switch parts[i] {
		case "users":
			typ = EntityUser
		case "clients":
			typ = EntityClientID
		case "ips":
			typ = EntityIP
		default:
			return Entity{}, fmt.Errorf("%w: key %q", ErrInvalidEntity, key)
		}
		c := EntityComponent{Type: typ}
		if parts[i+1] != DefaultName {
			name, err := url.PathUnescape(parts[i+1])
			if err != nil {
				return Entity{}, fmt.Errorf("%w: key %q: %w", ErrInvalidEntity, key, err)
			}
			c.Name = &name
		}
		comps = append(comps, c)
	}
	e, err := NewEntity(comps...)
	if err != nil {
		return Entity{}, err
	}
	if e.Key() != key {
		// Out of order (clients before users) or not canonically escaped:
		// one entity must have one key.
		return Entity{}, fmt.Errorf("%w: key %q is not canonical (want %q)", ErrInvalidEntity, key, e.Key())
	}
	return e, nil
}
