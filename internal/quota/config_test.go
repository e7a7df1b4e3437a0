package quota

import (
	"errors"
	"math"
	"reflect"
	"testing"
)

func ptr(s string) *string { return &s }

// The eight levels, from most to least specific, for user alice and client id app.
var (
	lvUC   = Entity{User: Named("alice"), ClientID: Named("app")}
	lvUCd  = Entity{User: Named("alice"), ClientID: Default()}
	lvU    = Entity{User: Named("alice")}
	lvUdC  = Entity{User: Default(), ClientID: Named("app")}
	lvUdCd = Entity{User: Default(), ClientID: Default()}
	lvUd   = Entity{User: Default()}
	lvC    = Entity{ClientID: Named("app")}
	lvCd   = Entity{ClientID: Default()}
)

func mustAlter(t *testing.T, c Config, e Entity, key string, v float64) {
	t.Helper()
	if err := c.Alter(e, key, v, false); err != nil {
		t.Fatalf("Alter(%s, %s, %v): %v", e, key, v, err)
	}
}

// Reference: KIP-55 (quota precedence), Kafka DefaultQuotaCallback.quotaMetricTags (sensor
// sharing).
func TestResolvePicksMostSpecificEntityAndItsSensor(t *testing.T) {
	levels := []Entity{lvUC, lvUCd, lvU, lvUdC, lvUdCd, lvUd, lvC, lvCd}
	sensors := []SensorKey{
		{KeyProducerByteRate, "alice", "app"},
		{KeyProducerByteRate, "alice", "app"},
		{KeyProducerByteRate, "alice", ""},
		{KeyProducerByteRate, "alice", "app"},
		{KeyProducerByteRate, "alice", "app"},
		{KeyProducerByteRate, "alice", ""},
		{KeyProducerByteRate, "", "app"},
		{KeyProducerByteRate, "", "app"},
	}
	// With levels i.. configured, level i wins; each level alone also wins.
	for i := range levels {
		for _, alone := range []bool{false, true} {
			c := make(Config)
			for j := i; j < len(levels); j++ {
				if alone && j != i {
					continue
				}
				mustAlter(t, c, levels[j], KeyProducerByteRate, float64(1000*(j+1)))
			}
			// Noise: another key at a more specific level must not hide this key.
			if i > 0 {
				mustAlter(t, c, levels[0], KeyConsumerByteRate, 7)
			}
			res := NewImage(c).Resolve("alice", "app", KeyProducerByteRate)
			want := Resolution{Found: true, Quota: float64(1000 * (i + 1)), Entity: levels[i], Sensor: sensors[i]}
			if res != want {
				t.Errorf("level %d (%s) alone=%v: got %+v, want %+v", i+1, levels[i], alone, res, want)
			}
		}
	}
}

// Reference: KIP-55: a user quota is shared by all of that user's client ids; a client-id
// quota by all users of that client id.
func TestResolveSharesSensorAcrossClientsOfOneEntity(t *testing.T) {
	c := make(Config)
	mustAlter(t, c, Entity{User: Named("alice")}, KeyProducerByteRate, 100)
	mustAlter(t, c, Entity{ClientID: Named("app")}, KeyProducerByteRate, 200)
	mustAlter(t, c, Entity{User: Default(), ClientID: Default()}, KeyConsumerByteRate, 300)
	img := NewImage(c)
	tests := []struct {
		user, client, key string
		want              SensorKey
		quota             float64
	}{
		{"alice", "a1", KeyProducerByteRate, SensorKey{KeyProducerByteRate, "alice", ""}, 100},
		{"alice", "a2", KeyProducerByteRate, SensorKey{KeyProducerByteRate, "alice", ""}, 100},
		{"bob", "app", KeyProducerByteRate, SensorKey{KeyProducerByteRate, "", "app"}, 200},
		{"carol", "app", KeyProducerByteRate, SensorKey{KeyProducerByteRate, "", "app"}, 200},
		// /users/<default>/clients/<default>: each (user, client) pair has its own rate.
		{"bob", "x", KeyConsumerByteRate, SensorKey{KeyConsumerByteRate, "bob", "x"}, 300},
		{"bob", "y", KeyConsumerByteRate, SensorKey{KeyConsumerByteRate, "bob", "y"}, 300},
	}
	for _, tt := range tests {
		res := img.Resolve(tt.user, tt.client, tt.key)
		if res.Sensor != tt.want || res.Quota != tt.quota {
			t.Errorf("Resolve(%s, %s, %s) = %+v, want sensor %+v quota %v", tt.user, tt.client, tt.key, res, tt.want, tt.quota)
		}
	}
	res := img.Resolve("bob", "x", KeyRequestPercentage)
	if res.Found || !math.IsInf(res.Quota, 1) || res.Sensor != (SensorKey{KeyRequestPercentage, "", "x"}) {
		t.Errorf("unconfigured key: got %+v", res)
	}
}

func TestImageIsASnapshot(t *testing.T) {
	c := make(Config)
	mustAlter(t, c, lvU, KeyProducerByteRate, 100)
	img := NewImage(c)
	mustAlter(t, c, lvU, KeyProducerByteRate, 5)
	if got := img.Resolve("alice", "app", KeyProducerByteRate).Quota; got != 100 {
		t.Fatalf("image changed with its config: %v", got)
	}
}

// Reference: KIP-546 (AlterClientQuotas validation), Kafka ClientQuotaControlManager
// validateEntity and validateQuotaKeyValue.
func TestAlterValidatesLikeKafka(t *testing.T) {
	tests := []struct {
		name   string
		entity Entity
		key    string
		value  float64
		remove bool
		want   error
	}{
		{"user producer rate", lvU, KeyProducerByteRate, 1024, false, nil},
		{"user+client request pct", lvUC, KeyRequestPercentage, 12.5, false, nil},
		{"default client mutation rate", lvCd, KeyControllerMutationRate, 0.5, false, nil},
		{"ip rate", Entity{IP: Named("10.0.0.1")}, KeyConnectionCreationRate, 10, false, nil},
		{"default ip rate", Entity{IP: Default()}, KeyConnectionCreationRate, 10, false, nil},
		{"remove unset key", lvU, KeyConsumerByteRate, 0, true, nil},
		{"unknown key", lvU, "fetch_byte_rate", 1, false, ErrUnknownKey},
		{"ip key on user", lvU, KeyConnectionCreationRate, 1, false, ErrUnknownKey},
		{"user key on ip", Entity{IP: Named("10.0.0.1")}, KeyProducerByteRate, 1, false, ErrUnknownKey},
		{"unknown key on remove", lvU, "nope", 0, true, ErrUnknownKey},
		{"empty entity", Entity{}, KeyProducerByteRate, 1, false, ErrInvalidEntity},
		{"ip with user", Entity{User: Named("a"), IP: Named("10.0.0.1")}, KeyConnectionCreationRate, 1, false, ErrInvalidEntity},
		{"ip with client", Entity{ClientID: Default(), IP: Default()}, KeyConnectionCreationRate, 1, false, ErrInvalidEntity},
		{"ip not an address", Entity{IP: Named("host.example")}, KeyConnectionCreationRate, 1, false, ErrInvalidEntity},
		{"fractional long", lvU, KeyProducerByteRate, 10.5, false, ErrInvalidValue},
		{"fractional int ip", Entity{IP: Default()}, KeyConnectionCreationRate, 1.25, false, ErrInvalidValue},
		{"long within epsilon", lvU, KeyConsumerByteRate, 10 + 1e-7, false, nil},
		{"zero", lvU, KeyProducerByteRate, 0, false, ErrInvalidValue},
		{"negative double", lvU, KeyRequestPercentage, -1, false, ErrInvalidValue},
		{"NaN", lvU, KeyRequestPercentage, math.NaN(), false, ErrInvalidValue},
		{"Inf", lvU, KeyRequestPercentage, math.Inf(1), false, ErrInvalidValue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := make(Config)
			err := c.Alter(tt.entity, tt.key, tt.value, tt.remove)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Alter = %v, want %v", err, tt.want)
			}
			if err != nil && len(c) != 0 {
				t.Fatalf("failed Alter changed the config: %v", c)
			}
		})
	}
}

func TestAlterRemoveDropsEmptyEntity(t *testing.T) {
	c := make(Config)
	mustAlter(t, c, lvU, KeyProducerByteRate, 1)
	mustAlter(t, c, lvU, KeyConsumerByteRate, 2)
	if err := c.Alter(lvU, KeyProducerByteRate, 0, true); err != nil {
		t.Fatal(err)
	}
	if got := c[lvU]; !reflect.DeepEqual(got, map[string]float64{KeyConsumerByteRate: 2}) {
		t.Fatalf("after one removal: %v", got)
	}
	if err := c.Alter(lvU, KeyConsumerByteRate, 0, true); err != nil {
		t.Fatal(err)
	}
	if len(c) != 0 {
		t.Fatalf("entity with no keys kept: %v", c)
	}
}

// Reference: KIP-546 (entity names: nil is the default entity).
func TestNewEntityFromWireComponents(t *testing.T) {
	tests := []struct {
		name  string
		comps []EntityComponent
		want  Entity
		err   error
	}{
		{"user and client", []EntityComponent{{EntityClientID, ptr("app")}, {EntityUser, ptr("alice")}}, lvUC, nil},
		{"default user", []EntityComponent{{EntityUser, nil}}, lvUd, nil},
		{"ip", []EntityComponent{{EntityIP, ptr("::1")}}, Entity{IP: Named("::1")}, nil},
		{"empty", nil, Entity{}, ErrInvalidEntity},
		{"twice", []EntityComponent{{EntityUser, nil}, {EntityUser, ptr("a")}}, Entity{}, ErrInvalidEntity},
		{"unknown type", []EntityComponent{{"group", ptr("g")}}, Entity{}, ErrInvalidEntity},
		{"ip with user", []EntityComponent{{EntityIP, nil}, {EntityUser, nil}}, Entity{}, ErrInvalidEntity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewEntity(tt.comps...)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if err == nil && got != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
			if err == nil {
				back, err := NewEntity(got.Components()...)
				if err != nil || back != got {
					t.Fatalf("round trip: %s, %v", back, err)
				}
			}
		})
	}
	if s := lvUdC.String(); s != "/users/<default>/clients/app" {
		t.Errorf("String = %q", s)
	}
}

func TestIPConnectionRateFallsBackToDefaultIP(t *testing.T) {
	c := make(Config)
	mustAlter(t, c, Entity{IP: Named("10.0.0.1")}, KeyConnectionCreationRate, 5)
	mustAlter(t, c, Entity{IP: Named("2001:db8::0001")}, KeyConnectionCreationRate, 6)
	img := NewImage(c)
	for _, tt := range []struct {
		ip   string
		want float64
		ok   bool
	}{{"10.0.0.1", 5, true}, {"2001:db8::1", 6, true}, {"10.0.0.2", 0, false}} {
		if got, ok := img.IPConnectionRate(tt.ip); got != tt.want || ok != tt.ok {
			t.Errorf("IPConnectionRate(%s) = %v, %v; want %v, %v", tt.ip, got, ok, tt.want, tt.ok)
		}
	}
	mustAlter(t, c, Entity{IP: Default()}, KeyConnectionCreationRate, 2)
	if got, ok := NewImage(c).IPConnectionRate("10.0.0.2"); got != 2 || !ok {
		t.Errorf("default ip: %v, %v", got, ok)
	}
}

// Reference: KIP-546 (DescribeClientQuotas: EXACT, DEFAULT, ANY match types and strict).
func TestDescribeFiltersLikeKIP546(t *testing.T) {
	c := make(Config)
	entities := []Entity{lvUC, lvUCd, lvU, lvUdC, lvUdCd, lvUd, lvC, lvCd,
		{User: Named("bob")}, {IP: Named("10.0.0.1")}, {IP: Default()}}
	for _, e := range entities {
		key := KeyProducerByteRate
		if e.IP.Set {
			key = KeyConnectionCreationRate
		}
		mustAlter(t, c, e, key, 1)
	}
	img := NewImage(c)
	exact := func(typ, name string) FilterComponent { return FilterComponent{typ, MatchExact, ptr(name)} }
	def := func(typ string) FilterComponent { return FilterComponent{typ, MatchDefault, nil} }
	anyOf := func(typ string) FilterComponent { return FilterComponent{typ, MatchAny, nil} }
	tests := []struct {
		name   string
		filter []FilterComponent
		strict bool
		want   []string
		err    error
	}{
		{"no filter matches all", nil, false, []string{
			"/clients/<default>", "/clients/app", "/ips/10.0.0.1", "/ips/<default>",
			"/users/<default>", "/users/<default>/clients/<default>", "/users/<default>/clients/app",
			"/users/alice", "/users/alice/clients/<default>", "/users/alice/clients/app", "/users/bob"}, nil},
		{"no filter strict matches none", nil, true, nil, nil},
		{"exact user", []FilterComponent{exact(EntityUser, "alice")}, false, []string{
			"/users/alice", "/users/alice/clients/<default>", "/users/alice/clients/app"}, nil},
		{"exact user strict", []FilterComponent{exact(EntityUser, "alice")}, true, []string{"/users/alice"}, nil},
		{"default user", []FilterComponent{def(EntityUser)}, false, []string{
			"/users/<default>", "/users/<default>/clients/<default>", "/users/<default>/clients/app"}, nil},
		{"any user strict", []FilterComponent{anyOf(EntityUser)}, true, []string{
			"/users/<default>", "/users/alice", "/users/bob"}, nil},
		{"any user, default client", []FilterComponent{anyOf(EntityUser), def(EntityClientID)}, true, []string{
			"/users/<default>/clients/<default>", "/users/alice/clients/<default>"}, nil},
		{"exact client", []FilterComponent{exact(EntityClientID, "app")}, false, []string{
			"/clients/app", "/users/<default>/clients/app", "/users/alice/clients/app"}, nil},
		{"exact name never matches default", []FilterComponent{exact(EntityUser, "<default>")}, false, nil, nil},
		{"any ip", []FilterComponent{anyOf(EntityIP)}, false, []string{"/ips/10.0.0.1", "/ips/<default>"}, nil},
		{"default ip", []FilterComponent{def(EntityIP)}, true, []string{"/ips/<default>"}, nil},
		{"ip with user", []FilterComponent{anyOf(EntityIP), anyOf(EntityUser)}, false, nil, ErrInvalidFilter},
		{"twice", []FilterComponent{anyOf(EntityUser), def(EntityUser)}, false, nil, ErrInvalidFilter},
		{"exact without name", []FilterComponent{{EntityUser, MatchExact, nil}}, false, nil, ErrInvalidFilter},
		{"unknown match type", []FilterComponent{{EntityUser, 3, nil}}, false, nil, ErrInvalidFilter},
		{"unknown type", []FilterComponent{anyOf("group")}, false, nil, ErrInvalidFilter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := img.Describe(tt.filter, tt.strict)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			var names []string
			for _, d := range got {
				names = append(names, d.Entity.String())
				if len(d.Values) != 1 {
					t.Errorf("%s: values %v", d.Entity, d.Values)
				}
			}
			if !reflect.DeepEqual(names, tt.want) {
				t.Fatalf("got %q\nwant %q", names, tt.want)
			}
		})
	}
}

// Has and Empty let the broker skip quota work; they see only what the Image holds.
func TestImageHasOnlyTheKeysSomeEntitySets(t *testing.T) {
	if img := NewImage(make(Config)); !img.Empty() || img.Has(KeyProducerByteRate) {
		t.Error("an empty image has keys")
	}
	var nilImg *Image
	if !nilImg.Empty() || nilImg.Has(KeyProducerByteRate) {
		t.Error("a nil image has keys")
	}
	c := make(Config)
	mustAlter(t, c, lvUd, KeyProducerByteRate, 1024)
	img := NewImage(c)
	mustAlter(t, c, lvC, KeyRequestPercentage, 10) // after NewImage: not seen
	if img.Empty() || !img.Has(KeyProducerByteRate) || img.Has(KeyConsumerByteRate) || img.Has(KeyRequestPercentage) || img.Has("nope") {
		t.Errorf("Has: producer %v consumer %v request %v", img.Has(KeyProducerByteRate), img.Has(KeyConsumerByteRate), img.Has(KeyRequestPercentage))
	}
}

// The checks the broker makes on every request allocate nothing, whether or
// not a quota applies to the client.
func TestImageLookupsDoNotAllocate(t *testing.T) {
	c := make(Config)
	mustAlter(t, c, lvC, KeyProducerByteRate, 1024)
	img := NewImage(c)
	empty := NewImage(make(Config))
	allocs := testing.AllocsPerRun(100, func() {
		_ = empty.Empty() || empty.Has(KeyProducerByteRate)
		_ = img.Has(KeyRequestPercentage)
		_ = img.Resolve("alice", "app", KeyProducerByteRate)
		_ = img.Resolve("bob", "other", KeyProducerByteRate)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per lookup round, want 0", allocs)
	}
}
