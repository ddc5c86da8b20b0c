package main

// Tagged JSON: the value a generic gob decoder must produce for a Go value, written with explicit types so
// that int64/uint64 beyond 2^53, bytes, NaN and -0 survive JSON. The walk follows gob's encoding rules
// (encode.go): pointers are flattened, struct fields that are zero are omitted (bool false, numbers 0,
// empty strings/slices/bytes, nil maps/pointers/interfaces, zero marshaler values), nested structs and
// arrays are always sent, GobEncoder/BinaryMarshaler values are opaque bytes.
//
// The type name a marshaler's wire definition carries depends on how the type was first sent on the
// stream (encoder.go sendType/getTypeInfo): the Name() of the declared type, so "" for a pointer field such
// as *metav1.Time, and only the first declaration per base type counts. walker replays that order.

import (
	"encoding"
	"encoding/base64"
	"encoding/gob"
	"fmt"
	"math"
	"reflect"
	"strconv"
)

type tagged = map[string]any

// interfaceNames maps concrete types put inside interfaces to the names they were registered under.
var interfaceNames = map[reflect.Type]string{}

func registerName(name string, value any) {
	gob.RegisterName(name, value)
	interfaceNames[reflect.TypeOf(value)] = name
}

var (
	gobEncoderType      = reflect.TypeFor[gob.GobEncoder]()
	binaryMarshalerType = reflect.TypeFor[encoding.BinaryMarshaler]()
)

func floatBits(f float64) string { return fmt.Sprintf("%016x", math.Float64bits(f)) }

// walker tags the values of one gob stream, remembering which types that stream has described.
type walker struct {
	described map[reflect.Type]bool
	names     map[reflect.Type]string // marshaler base type -> name in its wire definition
}

func newWalker() *walker {
	return &walker{described: map[reflect.Type]bool{}, names: map[reflect.Type]string{}}
}

func baseType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// describe replays Encoder.sendType: the type, then its field/element types, depth-first, once each.
func (w *walker) describe(t reflect.Type) {
	base := baseType(t)
	if w.described[base] {
		return
	}
	if isMarshaler(base) {
		w.described[base] = true
		w.names[base] = t.Name()
		return
	}
	switch base.Kind() {
	case reflect.Struct:
		w.described[base] = true
		for i := 0; i < base.NumField(); i++ {
			f := base.Field(i)
			if k := baseType(f.Type).Kind(); f.IsExported() && k != reflect.Chan && k != reflect.Func {
				w.describe(f.Type)
			}
		}
	case reflect.Slice:
		if base.Elem().Kind() != reflect.Uint8 {
			w.described[base] = true
			w.describe(base.Elem())
		}
	case reflect.Array:
		w.described[base] = true
		w.describe(base.Elem())
	case reflect.Map:
		w.described[base] = true
		w.describe(base.Key())
		w.describe(base.Elem())
	}
}

// top tags a value passed to Encoder.Encode.
func (w *walker) top(v reflect.Value) any {
	w.describe(v.Type())
	return w.value(v)
}

// marshaled returns the opaque form when gob would send v through a marshaler.
func (w *walker) marshaled(v reflect.Value) (tagged, bool) {
	t := v.Type()
	var kind string
	var data []byte
	var err error
	switch {
	case t.Implements(gobEncoderType):
		kind = "GobEncoder"
		data, err = v.Interface().(gob.GobEncoder).GobEncode()
	case t.Implements(binaryMarshalerType):
		kind = "BinaryMarshaler"
		data, err = v.Interface().(encoding.BinaryMarshaler).MarshalBinary()
	default:
		return nil, false
	}
	if err != nil {
		panic(err)
	}
	return tagged{"t": "opaque", "kind": kind, "type": w.names[t], "b64": base64.StdEncoding.EncodeToString(data)}, true
}

func isMarshaler(t reflect.Type) bool {
	return t.Implements(gobEncoderType) || t.Implements(binaryMarshalerType)
}

// value tags a value that gob sends (top level, element, or non-omitted field).
func (w *walker) value(v reflect.Value) any {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			panic("nil pointer cannot be sent")
		}
		if isMarshaler(v.Type()) && !isMarshaler(v.Type().Elem()) {
			break
		}
		v = v.Elem()
	}
	if m, ok := w.marshaled(v); ok {
		return m
	}
	switch v.Kind() {
	case reflect.Bool:
		return tagged{"t": "bool", "v": v.Bool()}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return tagged{"t": "int", "v": strconv.FormatInt(v.Int(), 10)}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return tagged{"t": "uint", "v": strconv.FormatUint(v.Uint(), 10)}
	case reflect.Float32, reflect.Float64:
		return tagged{"t": "float", "bits": floatBits(v.Float())}
	case reflect.Complex64, reflect.Complex128:
		c := v.Complex()
		return tagged{"t": "complex", "re": floatBits(real(c)), "im": floatBits(imag(c))}
	case reflect.String:
		return tagged{"t": "string", "v": v.String()}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return tagged{"t": "bytes", "b64": base64.StdEncoding.EncodeToString(v.Bytes())}
		}
		return tagged{"t": "slice", "v": w.elements(v)}
	case reflect.Array:
		return tagged{"t": "array", "v": w.elements(v)}
	case reflect.Map:
		entries := [][2]any{}
		iter := v.MapRange()
		for iter.Next() {
			entries = append(entries, [2]any{w.value(iter.Key()), w.value(iter.Value())})
		}
		return tagged{"t": "map", "v": entries}
	case reflect.Struct:
		return tagged{"t": "struct", "f": w.fields(v)}
	case reflect.Interface:
		if v.IsNil() {
			return tagged{"t": "nil"}
		}
		elem := v.Elem()
		name, ok := interfaceNames[elem.Type()]
		if !ok {
			name = elem.Type().String() // gob's registerBasics names: "int", "string", "[]string", ...
		}
		w.describe(elem.Type()) // encodeInterface sends the concrete type's definitions here
		return tagged{"t": "iface", "name": name, "v": w.value(elem)}
	}
	panic("cannot tag " + v.Type().String())
}

func (w *walker) elements(v reflect.Value) []any {
	out := []any{}
	for i := 0; i < v.Len(); i++ {
		out = append(out, w.value(v.Index(i)))
	}
	return out
}

func (w *walker) fields(v reflect.Value) map[string]any {
	out := map[string]any{}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		base := f.Type
		for base.Kind() == reflect.Pointer {
			base = base.Elem()
		}
		if base.Kind() == reflect.Chan || base.Kind() == reflect.Func {
			continue
		}
		fv := v.Field(i)
		if omitted(fv) {
			continue
		}
		out[f.Name] = w.value(fv)
	}
	return out
}

// omitted reports whether gob leaves this struct field out.
func omitted(v reflect.Value) bool {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return true
		}
		v = v.Elem()
	}
	if isMarshaler(v.Type()) {
		return v.IsZero()
	}
	switch v.Kind() {
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Complex64, reflect.Complex128:
		return v.Complex() == 0
	case reflect.String, reflect.Slice:
		return v.Len() == 0
	case reflect.Map, reflect.Interface:
		return v.IsNil()
	}
	return false // structs and arrays are always sent
}
