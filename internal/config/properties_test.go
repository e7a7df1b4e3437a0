package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want map[string]string
	}{
		{"empty", "", map[string]string{}},
		{"comments and blanks", "# c\n! c\n\n   \n  # indented comment\na=1\n", map[string]string{"a": "1"}},
		{"separators", "a=1\nb:2\nc 3\nd = 4\ne : 5\nf\t6\ng= =7\nh::8\n", map[string]string{
			"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6", "g": "=7", "h": ":8"}},
		{"blank before separator", "a  =  x y  \n", map[string]string{"a": "x y  "}},
		{"key only", "flag\nother=\n", map[string]string{"flag": "", "other": ""}},
		{"continuation", "list = a,\\\n    b,\\\n\tc\n", map[string]string{"list": "a,b,c"}},
		{"even backslashes do not continue", "a=x\\\\\nb=y\n", map[string]string{"a": `x\`, "b": "y"}},
		{"continuation at end of input", "a=x\\", map[string]string{"a": "x"}},
		{"comment line does not continue", "# x\\\na=1\n", map[string]string{"a": "1"}},
		{"continued line starting with #", "a=1\\\n#2\n", map[string]string{"a": "1#2"}},
		{"escapes", `a=\t\n\r\f\\\=\:\ x` + "\n", map[string]string{"a": "\t\n\r\f\\=: x"}},
		{"escaped separator in key", `k\=ey\:x\ y=v` + "\n", map[string]string{"k=ey:x y": "v"}},
		{"unicode", `a=caf\u00e9 \u20AC` + "\n", map[string]string{"a": "café €"}},
		{"surrogate pair", `a=\uD83D\uDE00` + "\n", map[string]string{"a": "😀"}},
		{"utf8 as is", "a=ünï\n", map[string]string{"a": "ünï"}},
		{"unknown escape is the char", `a=\q\z` + "\n", map[string]string{"a": "qz"}},
		{"CR and CRLF line ends", "a=1\rb=2\r\nc=3", map[string]string{"a": "1", "b": "2", "c": "3"}},
		{"last wins", "a=1\na=2\n", map[string]string{"a": "2"}},
		{"leading blanks", "   \t a=1\n", map[string]string{"a": "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseProperties(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParsePropertiesErrors(t *testing.T) {
	for _, in := range []string{`a=\u12`, `a=\uZZZZ`, "b=1\n" + `\u00=x`} {
		if _, err := ParseProperties(strings.NewReader(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}
