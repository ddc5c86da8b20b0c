// Package gobjson turns Go values into the "canonical gob-JSON" that the TS fixture echoes,
// by following encoding/gob's own rules (exported fields only, pointers flattened, chan/func
// skipped, GobEncoder/BinaryMarshaler values opaque), and compares such trees after
// zero-normalization.
package gobjson

import (
	"encoding"
	"encoding/base64"
	"encoding/gob"
	"fmt"
	"iter"
	"math"
	"reflect"
	"strconv"
	"sync"
	"time"
)

// maxSafeInteger is 2^53-1: larger magnitudes are rendered as decimal strings so JS loses nothing.
const maxSafeInteger = 1<<53 - 1

var (
	gobEncoderType      = reflect.TypeFor[gob.GobEncoder]()
	binaryMarshalerType = reflect.TypeFor[encoding.BinaryMarshaler]()
	timeType            = reflect.TypeFor[time.Time]()
)

// Interface renders a value carried in a Go interface under its gob-registered name.
func Interface(registeredName string, value any) any {
	return map[string]any{"$iface": registeredName, "$value": Canonical(value)}
}

// Canonical renders v (any Go value gob can encode) as a JSON-ready tree of
// map[string]any, []any, string, bool, int64, uint64, float64 and nil.
func Canonical(v any) any {
	if v == nil {
		return nil
	}
	return walk(reflect.ValueOf(v))
}

func walk(v reflect.Value) any {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if out, ok := external(v); ok {
		return out
	}
	switch v.Kind() {
	case reflect.Bool:
		return v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return integer(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return unsigned(v.Uint())
	case reflect.Float32, reflect.Float64:
		return float(v.Float())
	case reflect.String:
		return v.String()
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return bytesValue(v.Bytes())
		}
		return list(v)
	case reflect.Array:
		return list(v)
	case reflect.Map:
		return mapValue(v)
	case reflect.Struct:
		return structValue(v)
	case reflect.Interface:
		if v.IsNil() {
			return nil
		}
		concrete := v.Elem()
		name := registeredName(concrete)
		return map[string]any{"$iface": name, "$value": walk(concrete)}
	default:
		// chan/func/complex: gob never sends chan/func fields; complex does not occur in Argo types.
		panic(fmt.Sprintf("gobjson: unsupported kind %s (%s)", v.Kind(), v.Type()))
	}
}

// external handles GobEncoder / BinaryMarshaler values the way gob does: preference GobEncoder,
// then BinaryMarshaler (TextMarshaler is never used by gob for encoding).
func external(v reflect.Value) (any, bool) {
	t := v.Type()
	implementsGob, implementsBinary := marshalers(t)
	if !implementsGob && !implementsBinary {
		return nil, false
	}
	if v.IsZero() {
		return nil, true // gob omits zero external values; normalization drops the null.
	}
	if tm, ok := asTime(v); ok {
		return timeValue(tm), true
	}
	addressable := reflect.New(t)
	addressable.Elem().Set(v)
	var data []byte
	var err error
	if implementsGob {
		data, err = addressable.Interface().(gob.GobEncoder).GobEncode()
	} else {
		data, err = addressable.Interface().(encoding.BinaryMarshaler).MarshalBinary()
	}
	if err != nil {
		panic(fmt.Sprintf("gobjson: encoding %s: %v", t, err))
	}
	name := t.Name()
	if name == "" {
		name = t.String()
	}
	return map[string]any{"$opaque": name, "$bytes": base64.StdEncoding.EncodeToString(data)}, true
}

// marshalerKinds caches marshalers per type (reflect's Implements was a tenth of the fuzz's time).
var marshalerKinds sync.Map // reflect.Type → [2]bool

// marshalers reports whether t or *t implements gob.GobEncoder, and encoding.BinaryMarshaler.
func marshalers(t reflect.Type) (gobEncoder, binaryMarshaler bool) {
	if cached, ok := marshalerKinds.Load(t); ok {
		kinds := cached.([2]bool)
		return kinds[0], kinds[1]
	}
	gobEncoder = t.Implements(gobEncoderType) || reflect.PointerTo(t).Implements(gobEncoderType)
	binaryMarshaler = t.Implements(binaryMarshalerType) || reflect.PointerTo(t).Implements(binaryMarshalerType)
	marshalerKinds.Store(t, [2]bool{gobEncoder, binaryMarshaler})
	return gobEncoder, binaryMarshaler
}

// asTime recognises time.Time and structs whose first embedded field is time.Time (metav1.Time,
// metav1.MicroTime): they gob-encode with time.Time's GobEncode.
func asTime(v reflect.Value) (time.Time, bool) {
	if v.Type() == timeType {
		return v.Interface().(time.Time), true
	}
	if v.Kind() == reflect.Struct && v.NumField() == 1 && v.Type().Field(0).Anonymous && v.Field(0).Type() == timeType {
		return v.Field(0).Interface().(time.Time), true
	}
	return time.Time{}, false
}

// TimeValue is the canonical form of a time: instant in UTC plus the zone offset gob transmits.
func timeValue(t time.Time) map[string]any {
	var offset any
	if t.Location() != time.UTC {
		_, seconds := t.Zone()
		offset = int64(seconds)
	}
	return map[string]any{"$time": t.UTC().Format(time.RFC3339Nano), "$offset": offset}
}

func integer(i int64) any {
	if i > maxSafeInteger || i < -maxSafeInteger {
		return strconv.FormatInt(i, 10)
	}
	return i
}

func unsigned(u uint64) any {
	if u > maxSafeInteger {
		return strconv.FormatUint(u, 10)
	}
	return u
}

func float(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return f
}

func bytesValue(b []byte) any {
	return map[string]any{"$bytes": base64.StdEncoding.EncodeToString(b)}
}

func list(v reflect.Value) any {
	out := make([]any, v.Len())
	for i := range out {
		out[i] = walk(v.Index(i))
	}
	return out
}

func mapValue(v reflect.Value) any {
	if v.IsNil() {
		return nil
	}
	out := make(map[string]any, v.Len())
	iter := v.MapRange()
	for iter.Next() {
		out[mapKey(iter.Key())] = walk(iter.Value())
	}
	return out
}

func mapKey(k reflect.Value) string {
	switch k.Kind() {
	case reflect.String:
		return k.String()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(k.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(k.Uint(), 10)
	case reflect.Bool:
		return strconv.FormatBool(k.Bool())
	}
	panic(fmt.Sprintf("gobjson: unsupported map key kind %s", k.Kind()))
}

func structValue(v reflect.Value) any {
	out := make(map[string]any, v.NumField())
	for name, field := range sentFields(v) {
		out[name] = walk(field)
	}
	return out
}

// sentFields yields the struct fields gob sends (isSent), by name.
func sentFields(v reflect.Value) iter.Seq2[string, reflect.Value] {
	return func(yield func(string, reflect.Value) bool) {
		t := v.Type()
		for i := range t.NumField() {
			if field := t.Field(i); isSent(field) && !yield(field.Name, v.Field(i)) {
				return
			}
		}
	}
}

// isSent mirrors encoding/gob: only exported fields, and never chan/func (or pointers to them).
func isSent(field reflect.StructField) bool {
	if !field.IsExported() {
		return false
	}
	t := field.Type
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() != reflect.Chan && t.Kind() != reflect.Func
}

// registeredName finds the name gob.Register/RegisterName gave the concrete type (by encoding it
// as an interface and reading the name back would be roundabout; gob keeps the map private), so
// the caller supplies names via RegisterName below.
func registeredName(concrete reflect.Value) string {
	t := concrete.Type()
	if name, ok := names[t]; ok {
		return name
	}
	panic(fmt.Sprintf("gobjson: no registered gob name known for %s; call gobjson.RegisterName", t))
}

var names = map[reflect.Type]string{}

// RegisterName tells the walker which gob name a concrete type travels under inside interfaces.
func RegisterName(name string, value any) {
	names[reflect.TypeOf(value)] = name
}
