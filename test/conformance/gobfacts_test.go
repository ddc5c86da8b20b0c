package conformance_test

import (
	"bytes"
	"encoding/gob"
	"testing"
	"time"

	steprpc "github.com/argoproj/argo-rollouts/rollout/steps/plugin/rpc"
	"github.com/argoproj/argo-rollouts/utils/plugin/types"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"vmzones/test/conformance/payloads"
)

// Facts about encoding/gob that docs/protocol.md ("Wire facts") states and the TS codec relies on, checked with
// the real Go encoder/decoder.

// TestGobDropsQuantityMagnitude: resource.Quantity has no GobEncoder/BinaryMarshaler and only one
// exported field (Format), so gob transmits no magnitude: "500m" arrives as the zero quantity.
func TestGobDropsQuantityMagnitude(t *testing.T) {
	type holder struct{ Q resource.Quantity }
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(holder{Q: resource.MustParse("500m")}); err != nil {
		t.Fatal(err)
	}
	var decoded holder
	if err := gob.NewDecoder(&buf).Decode(&decoded); err != nil {
		t.Fatal(err)
	}
	if decoded.Q.MilliValue() != 0 || decoded.Q.Format != resource.DecimalSI {
		t.Errorf("decoded quantity = %s (format %q), want the magnitude lost and Format DecimalSI kept", decoded.Q.String(), decoded.Q.Format)
	}
}

// TestGobTimeNegativeSubMinuteOffset documents a Go standard library bug the TS decoder must not
// copy: Time.UnmarshalBinary adds the version-2 seconds byte as unsigned.
func TestGobTimeNegativeSubMinuteOffset(t *testing.T) {
	zone := time.FixedZone("LMT", -17762)
	type holder struct{ T metav1.Time }
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(holder{T: metav1.NewTime(time.Unix(1760000500, 0).In(zone))}); err != nil {
		t.Fatal(err)
	}
	var decoded holder
	if err := gob.NewDecoder(&buf).Decode(&decoded); err != nil {
		t.Fatal(err)
	}
	if _, offset := decoded.T.Zone(); offset != -17506 {
		t.Errorf("Go decoded offset %d; this test records Go's bug (-17506 instead of -17762) and must be revisited if Go fixes it", offset)
	}
}

// readMessages splits a gob stream into its messages (uint length prefix + body).
func readMessages(t *testing.T, stream []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(stream) > 0 {
		n, width := gobUint(t, stream)
		stream = stream[width:]
		if uint64(len(stream)) < n {
			t.Fatalf("truncated gob message: want %d bytes, have %d", n, len(stream))
		}
		out = append(out, stream[:n])
		stream = stream[n:]
	}
	return out
}

// gobUint decodes gob's unsigned integer encoding and returns the value and its width.
func gobUint(t *testing.T, b []byte) (uint64, int) {
	t.Helper()
	if b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	n := int(-int8(b[0]))
	var v uint64
	for _, c := range b[1 : 1+n] {
		v = v<<8 | uint64(c)
	}
	return v, 1 + n
}

// gobInt decodes gob's signed integer encoding.
func gobInt(t *testing.T, b []byte) (int64, int) {
	u, width := gobUint(t, b)
	if u&1 != 0 {
		return ^int64(u >> 1), width
	}
	return int64(u >> 1), width
}

// TestGobFramesInterfaceBodiesAsTheDocSays checks docs/protocol.md ("Interface bodies split across
// messages") with Go's own encoder: the first Plugin.Run body on a stream is split into several
// messages, the first holding the interface name and the first type definition, the last holding the
// concrete type id and the value; the second body on the same stream is one message.
func TestGobFramesInterfaceBodiesAsTheDocSays(t *testing.T) {
	var buf bytes.Buffer
	encoder := gob.NewEncoder(&buf)
	var args any = steprpc.RunArgs{Rollout: payloads.Rollout("x"), Context: &types.RpcStepContext{PluginName: "x"}}
	if err := encoder.Encode(&args); err != nil {
		t.Fatal(err)
	}
	messages := readMessages(t, buf.Bytes())
	name := "step.RunArgs"
	first := messages[0]
	prefix := append([]byte{0x10, 0x00, byte(len(name))}, name...)
	if len(messages) < 3 || !bytes.HasPrefix(first, prefix) {
		t.Fatalf("first message % x…, %d messages; want interface singleton %q then more messages", first[:min(24, len(first))], len(messages), name)
	}
	if id, _ := gobInt(t, first[len(prefix):]); id >= 0 {
		t.Errorf("after the interface name comes %d, want a type definition (negative id)", id)
	}
	for i, m := range messages[1 : len(messages)-1] {
		if id, _ := gobInt(t, m); id >= 0 {
			t.Errorf("message %d starts with %d, want a type definition", i+1, id)
		}
	}
	last := messages[len(messages)-1]
	id, width := gobInt(t, last)
	length, lengthWidth := gobUint(t, last[width:])
	if id < 64 || int(length) != len(last)-width-lengthWidth {
		t.Errorf("last message: concrete id %d, value length %d of %d remaining bytes; want id ≥ 64 and the rest of the message", id, length, len(last)-width-lengthWidth)
	}

	buf.Reset()
	if err := encoder.Encode(&args); err != nil {
		t.Fatal(err)
	}
	if again := readMessages(t, buf.Bytes()); len(again) != 1 || !bytes.HasPrefix(again[0], prefix) {
		t.Errorf("second body: %d messages, want one interface message", len(again))
	}
}

// TestGobSmallBodiesMatchTheDoc checks the byte strings of docs/protocol.md ("net/rpc: the first call, byte
// by byte") with Go's encoder.
func TestGobSmallBodiesMatchTheDoc(t *testing.T) {
	encode := func(v any) []byte {
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(v); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	var nilInterface any
	cases := []struct {
		name string
		got  []byte
		want []byte
	}{
		{"Dispense body \"RpcStepPlugin\"", encode("RpcStepPlugin"), append([]byte{0x10, 0x0C, 0x00, 0x0D}, "RpcStepPlugin"...)},
		{"Dispense reply uint32(1)", encode(uint32(1)), []byte{0x03, 0x06, 0x00, 0x01}},
		{"Ping body true", encode(true), []byte{0x03, 0x02, 0x00, 0x01}},
		{"nil interface body new(any)", encode(&nilInterface), []byte{0x03, 0x10, 0x00, 0x00}},
		{"Type reply \"my-step\"", encode("my-step"), append([]byte{0x0A, 0x0C, 0x00, 0x07}, "my-step"...)},
	}
	for _, c := range cases {
		if !bytes.Equal(c.got, c.want) {
			t.Errorf("%s: Go encodes % x, doc says % x", c.name, c.got, c.want)
		}
	}
}

// TestGobPointerTimeFieldsHaveNamelessWireType: the write-up we started from said *metav1.Time travels as a
// GobEncoderT named "Time" (docs/protocol.md, correction 2). Go actually describes a pointer field's type with a GobEncoderT whose
// CommonType has no Name (reflect's Name() of a pointer type is ""), so decoders must recognise
// times by the 15/16-byte layout in any GobEncoderT, not by the name.
func TestGobPointerTimeFieldsHaveNamelessWireType(t *testing.T) {
	now := metav1.Now()
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(struct{ StartedAt *metav1.Time }{&now}); err != nil {
		t.Fatal(err)
	}
	nameless := false
	for _, m := range readMessages(t, buf.Bytes()) {
		id, width := gobInt(t, m)
		// wireType field 4 (GobEncoderT: delta 5), CommonType (delta 1), then Id (delta 2) with no Name.
		if id < 0 && bytes.HasPrefix(m[width:], []byte{0x05, 0x01, 0x02}) {
			nameless = true
		}
	}
	if !nameless {
		t.Errorf("no nameless GobEncoderT definition in % x", buf.Bytes())
	}
}
