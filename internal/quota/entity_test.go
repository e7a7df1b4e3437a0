package quota

import (
	"errors"
	"testing"
)

// Entity keys round-trip, a name spelled <default> stays a name, and a key
// that is not the canonical one of its entity is refused, so one entity has
// exactly one stored key.
func TestEntityKeyRoundTripsAndIsCanonical(t *testing.T) {
	for _, tc := range []struct {
		e   Entity
		key string
	}{
		{lvUC, "users/alice/clients/app"},
		{lvUdCd, "users/<default>/clients/<default>"},
		{lvU, "users/alice"},
		{lvCd, "clients/<default>"},
		{Entity{User: Named("a/b c"), ClientID: Named("<default>")}, "users/a%2Fb%20c/clients/%3Cdefault%3E"},
		{Entity{IP: Named("10.0.0.1")}, "ips/10.0.0.1"},
		{Entity{IP: Named("::1")}, "ips/::1"},
		{Entity{IP: Default()}, "ips/<default>"},
	} {
		if got := tc.e.Key(); got != tc.key {
			t.Errorf("%s: Key %q, want %q", tc.e, got, tc.key)
		}
		e, err := ParseEntityKey(tc.key)
		if err != nil || e != tc.e {
			t.Errorf("ParseEntityKey(%q) = %s, %v; want %s", tc.key, e, err, tc.e)
		}
	}
	for _, bad := range []string{
		"", "users", "users/", "users/a/clients", "clients/app/users/alice", "groups/g",
		"users/a/users/b", "ips/host.example", "ips/1.2.3.4/users/a", "users/%zz",
		"users/a%2fb", // lower-case escape: not the canonical key of user a/b
	} {
		if e, err := ParseEntityKey(bad); !errors.Is(err, ErrInvalidEntity) {
			t.Errorf("ParseEntityKey(%q) = %s, %v; want ErrInvalidEntity", bad, e, err)
		}
	}
}

// One address is one entity, however it is spelled.
func TestNewEntityCanonicalisesIPs(t *testing.T) {
	e, err := NewEntity(EntityComponent{Type: EntityIP, Name: ptr("0:0::1")})
	if err != nil || e.IP != Named("::1") {
		t.Fatalf("NewEntity(ip 0:0::1) = %s, %v; want /ips/::1", e, err)
	}
	if _, err := NewEntity(EntityComponent{Type: EntityClientID, Name: ptr("")}); !errors.Is(err, ErrInvalidEntity) {
		t.Errorf("empty client id: %v, want ErrInvalidEntity", err)
	}
}
