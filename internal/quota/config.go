package quota

import (
	"fmt"
	"math"
	"net/netip"
	"sort"
)

// keySpec says where a key may be set and whether its value must be whole. Kafka types
// producer_byte_rate and consumer_byte_rate as LONG and connection_creation_rate as INT, and
// refuses a value further than 1e-6 from an integer for them; request_percentage and
// controller_mutation_rate are DOUBLE.
type keySpec struct {
	clientKey bool // settable on user / client-id entities
	ipKey     bool // settable on ip entities
	whole     bool
}

var keySpecs = map[string]keySpec{
	KeyProducerByteRate:       {clientKey: true, whole: true},
	KeyConsumerByteRate:       {clientKey: true, whole: true},
	KeyRequestPercentage:      {clientKey: true},
	KeyControllerMutationRate: {clientKey: true},
	KeyConnectionCreationRate: {ipKey: true, whole: true},
}

// Config is the set of configured quota entries, entity -> key -> value, as AlterClientQuotas
// stores and alters them. The zero value is not usable: make one with make(Config). A Config
// is not safe for concurrent use; publish an Image built from it instead.
type Config map[Entity]map[string]float64

// Alter sets entity's key to value, or removes the key when remove is true (value is then
// ignored, and removing a key that is not set is not an error). It follows Kafka's
// validation: the entity must be valid (ErrInvalidEntity), the key must be known and allowed
// for the entity's kind (ErrUnknownKey: connection_creation_rate only on ip entities, the
// other keys only on user/client-id entities), and the value must be finite and > 0, and
// whole for the LONG and INT keys (ErrInvalidValue).
//
// NB: Kafka does not check the sign here; samsa refuses values <= 0 because the throttle
// formula divides by the quota and a zero quota would throttle for ever.
func (c Config) Alter(entity Entity, key string, value float64, remove bool) error {
	if err := validateEntity(entity); err != nil {
		return err
	}
	if entity.IP.Set && !entity.IP.Default {
		// Store the canonical form so that Image.IPConnectionRate finds it.
		entity.IP.Name = netip.MustParseAddr(entity.IP.Name).String()
	}
	spec, ok := keySpecs[key]
	if !ok || (entity.IP.Set && !spec.ipKey) || (!entity.IP.Set && !spec.clientKey) {
		return fmt.Errorf("%w: %q for %s", ErrUnknownKey, key, entity)
	}
	if remove {
		if m := c[entity]; m != nil {
			delete(m, key)
			if len(m) == 0 {
				delete(c, entity)
			}
		}
		return nil
	}
	if math.IsNaN(value) || math.IsInf(value, 0) || value <= 0 {
		return fmt.Errorf("%w: %s %s = %v: must be finite and > 0", ErrInvalidValue, entity, key, value)
	}
	if spec.whole {
		const epsilon = 1e-6
		if math.Abs(math.Round(value)-value) > epsilon {
			return fmt.Errorf("%w: %s %s = %v: must be a whole number", ErrInvalidValue, entity, key, value)
		}
	}
	m := c[entity]
	if m == nil {
		m = make(map[string]float64)
		c[entity] = m
	}
	m[key] = value
	return nil
}

// Clone returns a deep copy, for validate-only alters. The caller owns it.
func (c Config) Clone() Config {
	out := make(Config, len(c))
	for e, m := range c {
		cm := make(map[string]float64, len(m))
		for k, v := range m {
			cm[k] = v
		}
		out[e] = cm
	}
	return out
}

// SensorKey names one measured rate. Clients that resolve to the same SensorKey share one
// rate and one quota. Following Kafka's DefaultQuotaCallback metric tags, User and ClientID
// are the client's own names, or "" where the entity that supplied the quota does not
// discriminate: a user-level quota (/users/U or /users/<default>) leaves ClientID empty so
// all the user's client ids share it, a client-level quota leaves User empty so all users of
// a client id share it, and user+client-id levels (including <default> ones) key by both.
type SensorKey struct {
	Key      string // the quota key: producer_byte_rate, ...
	User     string
	ClientID string
}

// Resolution is the answer of Image.Resolve.
type Resolution struct {
	Found  bool      // a configured entity supplied the quota
	Quota  float64   // the quota; +Inf when not Found
	Entity Entity    // the entity that supplied it, when Found
	Sensor SensorKey // the rate this client records into
}

// Image is an immutable snapshot of a Config, shared by all request handlers through an
// atomic.Pointer. All its methods are safe for concurrent use.
type Image struct {
	entries Config
	keys    uint8 // keyBit of every key some entity sets
}

// NewImage builds an Image from c. The Image keeps a copy; later changes to c do not show.
func NewImage(c Config) *Image {
	img := &Image{entries: c.Clone()}
	for _, m := range c {
		for k := range m {
			img.keys |= keyBit(k)
		}
	}
	return img
}

// keyBit numbers the quota keys for Image.Has; 0 for an unknown key.
func keyBit(key string) uint8 {
	switch key {
	case KeyProducerByteRate:
		return 1 << 0
	case KeyConsumerByteRate:
		return 1 << 1
	case KeyRequestPercentage:
		return 1 << 2
	case KeyControllerMutationRate:
		return 1 << 3
	case KeyConnectionCreationRate:
		return 1 << 4
	}
	return 0
}

// Has reports whether any entity sets key. It allocates nothing and takes no lock, so the
// broker calls it on every request to skip quota work when no quota of that kind exists.
// A nil Image has no key.
func (img *Image) Has(key string) bool { return img != nil && img.keys&keyBit(key) != 0 }

// Empty reports whether the Image has no entry at all; a nil Image is empty.
func (img *Image) Empty() bool { return img == nil || len(img.entries) == 0 }

// Config returns a copy of the entries, which the caller owns.
func (img *Image) Config() Config { return img.entries.Clone() }

func (img *Image) lookup(e Entity, key string) (float64, bool) {
	v, ok := img.entries[e][key]
	return v, ok
}

// Resolve finds the quota for key that applies to a client authenticated as user and
// sending clientID, with Kafka's precedence (KIP-55):
//
//  1. /users/U/clients/C
//  2. /users/U/clients/<default>
//  3. /users/U
//  4. /users/<default>/clients/C
//  5. /users/<default>/clients/<default>
//  6. /users/<default>
//  7. /clients/C
//  8. /clients/<default>
//
// Precedence is per key: an entity that sets only consumer_byte_rate does not hide a
// producer_byte_rate set at a lower level. When nothing matches, Found is false, Quota is
// +Inf and the sensor is keyed by client id, as Kafka does.
func (img *Image) Resolve(user, clientID, key string) Resolution {
	u, c := Named(user), Named(clientID)
	levels := [...]struct {
		e            Entity
		sUser, sClnt bool
	}{
		{Entity{User: u, ClientID: c}, true, true},
		{Entity{User: u, ClientID: Default()}, true, true},
		{Entity{User: u}, true, false},
		{Entity{User: Default(), ClientID: c}, true, true},
		{Entity{User: Default(), ClientID: Default()}, true, true},
		{Entity{User: Default()}, true, false},
		{Entity{ClientID: c}, false, true},
		{Entity{ClientID: Default()}, false, true},
	}
	for _, l := range levels {
		if v, ok := img.lookup(l.e, key); ok {
			s := SensorKey{Key: key}
			if l.sUser {
				s.User = user
			}
			if l.sClnt {
				s.ClientID = clientID
			}
			return Resolution{Found: true, Quota: v, Entity: l.e, Sensor: s}
		}
	}
	return Resolution{Quota: math.Inf(1), Sensor: SensorKey{Key: key, ClientID: clientID}}
}

// IPConnectionRate returns connection_creation_rate for ip: the ip's own entry, else the
// default ip entity's, else ok is false (unlimited). ip is compared as an address, so
// "::ffff:10.0.0.1" and "10.0.0.1" differ, as they do in Kafka.
func (img *Image) IPConnectionRate(ip string) (rate float64, ok bool) {
	if img == nil {
		return 0, false
	}
	if a, err := netip.ParseAddr(ip); err == nil {
		ip = a.String()
	}
	if v, ok := img.lookup(Entity{IP: Named(ip)}, KeyConnectionCreationRate); ok {
		return v, true
	}
	return img.lookup(Entity{IP: Default()}, KeyConnectionCreationRate)
}

// Match types of a DescribeClientQuotas filter component (KIP-546).
const (
	MatchExact   int8 = 0 // the component's name equals Match
	MatchDefault int8 = 1 // the component is the default entity
	MatchAny     int8 = 2 // the entity has a component of this type, any name or default
)

// FilterComponent is one component of a DescribeClientQuotas filter. Match is required for
// MatchExact and ignored otherwise.
type FilterComponent struct {
	EntityType string
	MatchType  int8
	Match      *string
}

// Described is one entity and its configured values, as DescribeClientQuotas returns it.
type Described struct {
	Entity Entity
	Values map[string]float64
}

// Describe returns the configured entities that match the filter, with KIP-546 semantics:
// every filter component must match a component of the entity; with strict, the entity
// must have no component types beyond those in the filter. Results are sorted by entity
// path. The caller owns the returned slice and maps. It fails with ErrInvalidFilter on an
// unknown entity type or match type, a type given twice, MatchExact without a name, or an
// ip component combined with user or client-id.
func (img *Image) Describe(filter []FilterComponent, strict bool) ([]Described, error) {
	var want [3]*FilterComponent // user, client-id, ip
	for i := range filter {
		f := &filter[i]
		var idx int
		switch f.EntityType {
		case EntityUser:
			idx = 0
		case EntityClientID:
			idx = 1
		case EntityIP:
			idx = 2
		default:
			return nil, fmt.Errorf("%w: unknown entity type %q", ErrInvalidFilter, f.EntityType)
		}
		if want[idx] != nil {
			return nil, fmt.Errorf("%w: entity type %q given twice", ErrInvalidFilter, f.EntityType)
		}
		switch f.MatchType {
		case MatchExact:
			if f.Match == nil {
				return nil, fmt.Errorf("%w: exact match on %q without a name", ErrInvalidFilter, f.EntityType)
			}
		case MatchDefault, MatchAny:
		default:
			return nil, fmt.Errorf("%w: unknown match type %d", ErrInvalidFilter, f.MatchType)
		}
		want[idx] = f
	}
	if want[2] != nil && (want[0] != nil || want[1] != nil) {
		return nil, fmt.Errorf("%w: ip must not be combined with user or client-id", ErrInvalidFilter)
	}
	var out []Described
	for e, m := range img.entries {
		comps := [3]Component{e.User, e.ClientID, e.IP}
		ok := true
		for i, f := range want {
			c := comps[i]
			if f == nil {
				if strict && c.Set {
					ok = false
				}
				continue
			}
			switch {
			case !c.Set:
				ok = false
			case f.MatchType == MatchExact:
				ok = ok && !c.Default && c.Name == *f.Match
			case f.MatchType == MatchDefault:
				ok = ok && c.Default
			}
		}
		if !ok || len(m) == 0 {
			continue
		}
		vals := make(map[string]float64, len(m))
		for k, v := range m {
			vals[k] = v
		}
		out = append(out, Described{Entity: e, Values: vals})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Entity.String() < out[j].Entity.String() })
	return out, nil
}
