package config

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ParseProperties reads a Java .properties file: '#' and '!' start comment
// lines; a key is separated from its value by '=', ':' or blanks; a line
// ending in an odd number of backslashes continues on the next line (whose
// leading blanks are dropped); \t \n \r \f \uXXXX and \<any> are escapes.
// A later key replaces an earlier one. The input is read as UTF-8.
func ParseProperties(r io.Reader) (map[string]string, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("config: read properties: %w", err)
	}
	out := make(map[string]string)
	lines := splitNaturalLines(string(data))
	for i := 0; i < len(lines); i++ {
		lineNo := i + 1
		line := trimLeftBlank(lines[i])
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		var logical strings.Builder
		for {
			if endsWithContinuation(line) {
				logical.WriteString(line[:len(line)-1])
				i++
				if i >= len(lines) {
					break
				}
				line = trimLeftBlank(lines[i])
				continue
			}
			logical.WriteString(line)
			break
		}
		rawKey, rawValue := splitKeyValue(logical.String())
		key, err := unescape(rawKey)
		if err != nil {
			return nil, fmt.Errorf("config: properties line %d: %w", lineNo, err)
		}
		value, err := unescape(rawValue)
		if err != nil {
			return nil, fmt.Errorf("config: properties line %d: %w", lineNo, err)
		}
		out[key] = value
	}
	return out, nil
}

// splitNaturalLines splits on \n, \r and \r\n.
func splitNaturalLines(s string) []string {
	var lines []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\n':
			lines = append(lines, s[start:i])
			start = i + 1
		case '\r':
			lines = append(lines, s[start:i])
			if i+1 < len(s) && s[i+1] == '\n' {
				i++
			}
			start = i + 1
		}
	}
	if start < len(s) {
		lines = append(lines, s[start:])
	}
	return lines
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

func trimLeftBlank(s string) string {
	i := 0
	for i < len(s) && isBlank(s[i]) {
		i++
	}
	return s[i:]
}

// endsWithContinuation reports whether s ends in an odd number of
// backslashes.
func endsWithContinuation(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitKeyValue splits a logical line (leading blanks already removed)
// into its raw, still escaped, key and value.
func splitKeyValue(s string) (key, value string) {
	i := 0
	for i < len(s) {
		c := s[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || isBlank(c) {
			break
		}
		i++
	}
	if i > len(s) {
		i = len(s)
	}
	key = s[:i]
	rest := s[i:]
	rest = trimLeftBlank(rest)
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = trimLeftBlank(rest[1:])
	}
	return key, rest
}

// unescape resolves backslash escapes.
func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break // a lone trailing backslash (end of input) is dropped
		}
		switch c = s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf("malformed \\u escape %q", s[i-1:])
			}
			n, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf("malformed \\u escape %q", s[i-1:i+5])
			}
			i += 4
			r := rune(n)
			// A surrogate pair is two \u escapes.
			if r >= 0xD800 && r < 0xDC00 && i+7 <= len(s) && strings.HasPrefix(s[i+1:], `\u`) {
				if lo, err := strconv.ParseUint(s[i+3:i+7], 16, 16); err == nil && lo >= 0xDC00 && lo < 0xE000 {
					r = (r-0xD800)<<10 + (rune(lo) - 0xDC00) + 0x10000
					i += 6
				}
			}
			b.WriteRune(r)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}
