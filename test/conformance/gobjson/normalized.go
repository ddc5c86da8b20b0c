package gobjson

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"
)

// NormalizedInterface is Normalize(ToGeneric(Interface(name, v))) computed in one walk over v,
// without the intermediate trees: the differential fuzz builds it for every random value, and
// the three passes were a fifth of its time. TestNormalizedEqualsTheThreePasses and the fuzz's
// own sampled cross-check hold it to the three-pass result.
func NormalizedInterface(name string, v any) any {
	out := map[string]any{"$iface": name}
	if v != nil {
		if value, empty := normalized(reflect.ValueOf(v)); !empty {
			out["$value"] = value
		}
	}
	return out
}

// normalized returns the normalized generic form of what walk would produce for v, and whether
// Normalize drops it as an object member (isEmpty).
func normalized(v reflect.Value) (any, bool) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, true
		}
		v = v.Elem()
	}
	if implementsGob, implementsBinary := marshalers(v.Type()); implementsGob || implementsBinary {
		external, _ := external(v)
		return normalizedTree(external)
	}
	switch v.Kind() {
	case reflect.Bool:
		return v.Bool(), !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i := v.Int()
		if i > maxSafeInteger || i < -maxSafeInteger {
			return strconv.FormatInt(i, 10), false
		}
		return json.Number(strconv.FormatInt(i, 10)), i == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u := v.Uint()
		if u > maxSafeInteger {
			return strconv.FormatUint(u, 10), false
		}
		return json.Number(strconv.FormatUint(u, 10)), u == 0
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return float(f), false
		}
		out, _ := viaJSON(f)
		return out, f == 0
	case reflect.String:
		return normalizedString(v.String())
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if v.Len() == 0 {
				return nil, true
			}
			return map[string]any{"$bytes": base64.StdEncoding.EncodeToString(v.Bytes())}, false
		}
		return normalizedList(v)
	case reflect.Array:
		return normalizedList(v)
	case reflect.Map:
		if v.IsNil() || v.Len() == 0 {
			return nil, true
		}
		out := make(map[string]any, v.Len())
		iter := v.MapRange()
		for iter.Next() {
			key := mapKey(iter.Key())
			if !utf8.ValidString(key) {
				// json.Marshal rewrites such keys and may merge them: the three passes, for this map only.
				return normalizedTree(walk(v))
			}
			if value, empty := normalizedMember(key, iter.Value()); !empty {
				out[key] = value
			}
		}
		return objectResult(out)
	case reflect.Struct:
		out := make(map[string]any, v.NumField())
		for name, field := range sentFields(v) {
			if value, empty := normalizedMember(name, field); !empty {
				out[name] = value
			}
		}
		return objectResult(out)
	case reflect.Interface:
		if v.IsNil() {
			return nil, true
		}
		concrete := v.Elem()
		out := map[string]any{"$iface": registeredName(concrete)}
		if value, empty := normalized(concrete); !empty {
			out["$value"] = value
		}
		return objectResult(out)
	}
	return normalizedTree(walk(v)) // walk panics on the kinds gob cannot send, as Canonical does
}

// normalizedMember is an object member's value; Normalize re-renders any "$time" member.
func normalizedMember(key string, v reflect.Value) (any, bool) {
	value, empty := normalized(v)
	if key == "$time" {
		value = canonicalTime(value)
		empty = isEmpty(value)
	}
	return value, empty
}

func normalizedString(s string) (any, bool) {
	if utf8.ValidString(s) {
		return s, s == ""
	}
	out, _ := viaJSON(s) // json.Marshal's own replacement of invalid bytes
	return out, false
}

func normalizedList(v reflect.Value) (any, bool) {
	if v.Len() == 0 {
		return nil, true
	}
	out := make([]any, v.Len())
	for i := range out {
		if value, empty := normalized(v.Index(i)); !empty {
			out[i] = value
		}
	}
	return out, false
}

func objectResult(out map[string]any) (any, bool) {
	if len(out) == 0 {
		return nil, true
	}
	return out, false
}

// normalizedTree is the three passes for a small canonical subtree (external values, odd maps).
func normalizedTree(canonical any) (any, bool) {
	generic, err := ToGeneric(canonical)
	if err != nil {
		panic("gobjson: " + err.Error()) // Canonical's own trees always encode
	}
	out := Normalize(generic)
	return out, isEmpty(out)
}
