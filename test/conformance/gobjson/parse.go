package gobjson

import (
	"encoding/json"
	"unicode/utf8"
)

// ParseNormalized is Normalize(ParseJSON(data)) in one pass over the text: the differential fuzz
// parses ~25 KB of echo per comparison, and encoding/json's generic decoding plus the separate
// Normalize pass were a quarter of its Go time. Strings with escapes or bytes that are not valid
// UTF-8, and any text the scanner rejects, go through encoding/json itself, so that its exact
// unquoting and error messages apply; TestParseNormalizedEqualsParseThenNormalize and the fuzz's
// sampled cross-check hold it to the two-step result.
func ParseNormalized(data []byte) (any, error) {
	p := parser{data: data}
	p.space()
	value, _, ok := p.value(0)
	if ok {
		p.space()
		ok = p.pos == len(p.data)
	}
	if !ok {
		generic, err := ParseJSON(data)
		if err != nil {
			return nil, err
		}
		return Normalize(generic), nil
	}
	return value, nil
}

// maxDepth: deeper text takes the encoding/json path (whose own limit is 10,000 levels).
const maxDepth = 1000

type parser struct {
	data []byte
	pos  int
}

func (p *parser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// value parses one value and returns its normalized form, whether Normalize drops it as a member
// (isEmpty), and false if the text is not something this parser handles.
func (p *parser) value(depth int) (any, bool, bool) {
	if p.pos >= len(p.data) || depth > maxDepth {
		return nil, false, false
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, ok := p.str()
		return s, s == "", ok
	case c == 't':
		return true, false, p.literal("true")
	case c == 'f':
		return false, true, p.literal("false")
	case c == 'n':
		return nil, true, p.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	return nil, false, false
}

func (p *parser) literal(word string) bool {
	if len(p.data)-p.pos < len(word) || string(p.data[p.pos:p.pos+len(word)]) != word {
		return false
	}
	p.pos += len(word)
	return true
}

func (p *parser) object(depth int) (any, bool, bool) {
	p.pos++ // {
	out := map[string]any{}
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return nil, true, true
	}
	for {
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, false, false
		}
		key, ok := p.str()
		if !ok {
			return nil, false, false
		}
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, false, false
		}
		p.pos++
		p.space()
		value, empty, ok := p.value(depth)
		if !ok {
			return nil, false, false
		}
		if key == "$time" {
			value = canonicalTime(value)
			empty = isEmpty(value)
		}
		if empty {
			delete(out, key) // a later duplicate key wins in encoding/json, even when Normalize drops it
		} else {
			out[key] = value
		}
		closed, ok := p.separator('}')
		switch {
		case !ok:
			return nil, false, false
		case closed && len(out) == 0:
			return nil, true, true
		case closed:
			return out, false, true
		}
	}
}

func (p *parser) array(depth int) (any, bool, bool) {
	p.pos++ // [
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return nil, true, true
	}
	out := []any{}
	for {
		p.space()
		value, empty, ok := p.value(depth)
		if !ok {
			return nil, false, false
		}
		if empty {
			value = nil
		}
		out = append(out, value)
		closed, ok := p.separator(']')
		switch {
		case !ok:
			return nil, false, false
		case closed:
			return out, false, true
		}
	}
}

// separator consumes the ',' or the closing byte after a member or element, and reports which it was.
func (p *parser) separator(closer byte) (closed, ok bool) {
	p.space()
	if p.pos >= len(p.data) {
		return false, false
	}
	switch p.data[p.pos] {
	case ',':
		p.pos++
		return false, true
	case closer:
		p.pos++
		return true, true
	}
	return false, false
}

// str parses a string at p.pos (its opening quote). Plain valid UTF-8 is taken as is; anything with
// an escape or a byte that is not valid UTF-8 is unquoted by encoding/json.
func (p *parser) str() (string, bool) {
	start := p.pos
	p.pos++
	plain := true
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			if plain {
				return string(p.data[start+1 : p.pos-1]), true
			}
			var s string
			if err := json.Unmarshal(p.data[start:p.pos], &s); err != nil {
				return "", false
			}
			return s, true
		case c == '\\':
			plain = false
			p.pos += 2 // the escaped byte can be a quote; encoding/json checks the escape itself
		case c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size == 1 {
				plain = false
			}
			p.pos += size
		}
	}
	return "", false
}

// number parses a JSON number; Normalize drops it when its value is zero (all mantissa digits 0).
func (p *parser) number() (any, bool, bool) {
	start := p.pos
	zero := true
	if p.data[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			if p.data[p.pos] != '0' {
				zero = false
			}
			p.pos++
			n++
		}
		return n
	}
	switch {
	case p.pos < len(p.data) && p.data[p.pos] == '0':
		p.pos++
	case digits() == 0:
		return nil, false, false
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return nil, false, false
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		mantissaZero := zero
		if digits() == 0 {
			return nil, false, false
		}
		zero = mantissaZero
	}
	return json.Number(p.data[start:p.pos]), zero, true
}
