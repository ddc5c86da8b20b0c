// Command gobvectors produces and checks gob test vectors for the TypeScript codec in plugin/goplugin/gob.
//
//	gobvectors gen DIR            write DIR/<case>.gob (a gob stream) and DIR/<case>.json (the expected
//	                              decoded values as tagged JSON), and DIR/time-layouts.json (time.Time layouts)
//	gobvectors decode-check T,..  decode stdin with encoding/gob into the named Go types, in order; print
//	                              {"values":[tagged...],"eof":bool,"error":"..."} (eof: the stream ended exactly)
//	gobvectors time-check         read hex time.Time binaries (one per line) from stdin; print how Go reads them
//
// Standard library only.
package main

import (
	"bufio"
	"bytes"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/rpc"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail(errors.New("usage: gobvectors gen DIR | decode-check TYPES | time-check"))
	}
	var err error
	switch os.Args[1] {
	case "gen":
		if len(os.Args) != 3 {
			fail(errors.New("usage: gobvectors gen DIR"))
		}
		err = generate(os.Args[2])
	case "decode-check":
		if len(os.Args) != 3 {
			fail(errors.New("usage: gobvectors decode-check TYPE[,TYPE...]"))
		}
		err = decodeCheck(strings.Split(os.Args[2], ","))
	case "time-check":
		err = timeCheck()
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gobvectors:", err)
	os.Exit(2)
}

func writeJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

func generate(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, c := range vectorCases() {
		var stream bytes.Buffer
		enc := gob.NewEncoder(&stream)
		expected := []any{}
		w := newWalker()
		for i, v := range c.values {
			if err := enc.Encode(v); err != nil {
				return fmt.Errorf("%s[%d]: %w", c.name, i, err)
			}
			expected = append(expected, w.top(reflect.ValueOf(v)))
		}
		if err := verifyGoDecodes(c, stream.Bytes()); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, c.name+".gob"), stream.Bytes(), 0o644); err != nil {
			return err
		}
		if err := writeJSON(filepath.Join(dir, c.name+".json"), expected); err != nil {
			return err
		}
	}
	var times []map[string]any
	for _, t := range timeVectors() {
		b, err := t.MarshalBinary()
		if err != nil {
			return err
		}
		read, err := readTime(b)
		if err != nil {
			return err
		}
		read["hex"] = hex.EncodeToString(b)
		times = append(times, read)
	}
	return writeJSON(filepath.Join(dir, "time-layouts.json"), times)
}

// verifyGoDecodes makes sure the stream is valid for Go itself (decoding into the values' own types).
func verifyGoDecodes(c vectorCase, stream []byte) error {
	dec := gob.NewDecoder(bytes.NewReader(stream))
	for i, v := range c.values {
		target := reflect.New(reflect.TypeOf(v))
		if err := dec.Decode(target.Interface()); err != nil {
			return fmt.Errorf("%s[%d]: Go cannot decode its own stream: %w", c.name, i, err)
		}
	}
	if err := dec.Decode(new(any)); err != io.EOF {
		return fmt.Errorf("%s: trailing data after the values: %v", c.name, err)
	}
	return nil
}

// readTime reports how Go's UnmarshalBinary reads b.
func readTime(b []byte) (map[string]any, error) {
	var t time.Time
	if err := t.UnmarshalBinary(b); err != nil {
		return nil, err
	}
	_, offset := t.Zone()
	return map[string]any{
		"unix":    fmt.Sprint(t.Unix()),
		"nanos":   t.Nanosecond(),
		"offset":  offset,
		"utc":     t.Location() == time.UTC,
		"rfc3339": t.Format(time.RFC3339Nano),
	}, nil
}

func timeCheck() error {
	out := []any{}
	scanner := bufio.NewScanner(os.Stdin)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if line == "" {
			continue
		}
		b, err := hex.DecodeString(line)
		if err != nil {
			return err
		}
		read, err := readTime(b)
		if err != nil {
			out = append(out, map[string]any{"error": err.Error()})
			continue
		}
		out = append(out, read)
	}
	if err := scanner.Err(); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// Go types the TS encoder's output is decoded into; shaped like Argo Rollouts' reply types.
type RpcError struct{ ErrorString string }

type RpcStepResult struct {
	Phase        string
	Message      string
	RequeueAfter time.Duration
	Status       json.RawMessage
}

type StepResponse struct {
	Result RpcStepResult
	Error  RpcError
}

type Measurement struct {
	Phase      string
	Message    string
	StartedAt  *MetaTime
	FinishedAt *MetaTime
	Value      string
	Metadata   map[string]string
	ResumeAt   *MetaTime
}

var checkTypes = map[string]reflect.Type{
	"Request":       reflect.TypeFor[rpc.Request](),
	"Response":      reflect.TypeFor[rpc.Response](),
	"RpcError":      reflect.TypeFor[RpcError](),
	"RpcStepResult": reflect.TypeFor[RpcStepResult](),
	"StepResponse":  reflect.TypeFor[StepResponse](),
	"Measurement":   reflect.TypeFor[Measurement](),
	"Empty":         reflect.TypeFor[struct{}](),
	"String":        reflect.TypeFor[string](),
	"Bool":          reflect.TypeFor[bool](),
	"Int64":         reflect.TypeFor[int64](),
	"Uint32":        reflect.TypeFor[uint32](),
	"Uint64":        reflect.TypeFor[uint64](),
	"Float64":       reflect.TypeFor[float64](),
	"Bytes":         reflect.TypeFor[[]byte](),
	"Strings":       reflect.TypeFor[[]string](),
	"StringMap":     reflect.TypeFor[map[string]string](),
	"IntMap":        reflect.TypeFor[map[int64][]uint](),
	"Time":          reflect.TypeFor[time.Time](),
	"Any":           reflect.TypeFor[any](),
	"Inner":         reflect.TypeFor[Inner](),
	"Outer":         reflect.TypeFor[Outer](),
}

func decodeCheck(names []string) error {
	dec := gob.NewDecoder(os.Stdin)
	result := map[string]any{"values": []any{}}
	values := []any{}
	w := newWalker()
	for _, name := range names {
		t, ok := checkTypes[name]
		if !ok {
			return fmt.Errorf("unknown type %q", name)
		}
		target := reflect.New(t)
		if err := dec.Decode(target.Interface()); err != nil {
			result["error"] = fmt.Sprintf("decoding %s: %v", name, err)
			break
		}
		values = append(values, w.top(target.Elem()))
	}
	result["values"] = values
	if result["error"] == nil {
		var rest any
		err := dec.Decode(&rest)
		result["eof"] = err == io.EOF
		if err != io.EOF {
			result["error"] = fmt.Sprintf("after the values: %v", err)
		}
	}
	return json.NewEncoder(os.Stdout).Encode(result)
}
