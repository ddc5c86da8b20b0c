package main

// Go types of the corpus. The Argo-like ones mirror the shapes the controller sends (embedded structs,
// *metav1.Time-like GobEncoder pointers, json.RawMessage, maps, pointers to ints, nested slices) without
// depending on Kubernetes modules.

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"time"
)

// MetaTime is shaped like metav1.Time: time.Time's GobEncode is promoted.
type MetaTime struct{ time.Time }

type TypeMeta struct{ Kind, APIVersion string }

type OwnerReference struct {
	APIVersion, Kind, Name, UID string
	Controller                  *bool
}

type ObjectMeta struct {
	Name, Namespace, UID, ResourceVersion string
	Generation                            int64
	CreationTimestamp                     MetaTime
	DeletionTimestamp                     *MetaTime
	Labels, Annotations                   map[string]string
	OwnerReferences                       []OwnerReference
	Finalizers                            []string
}

// Quantity mirrors resource.Quantity: only Format is exported, so only Format travels.
type Quantity struct {
	i      int64
	Format string
}

type IntOrString struct {
	Type   int
	IntVal int32
	StrVal string
}

type EnvVar struct{ Name, Value string }

type ContainerPort struct {
	Name          string
	ContainerPort int32
	Protocol      string
}

type ResourceRequirements struct{ Limits, Requests map[string]Quantity }

type Container struct {
	Name, Image string
	Command     []string
	Args        []string
	Env         []EnvVar
	Ports       []ContainerPort
	Resources   ResourceRequirements
}

type PodSpec struct {
	Containers   []Container
	NodeSelector map[string]string
}

type PodTemplateSpec struct {
	ObjectMeta
	Spec PodSpec
}

type PluginStep struct {
	Name   string
	Config json.RawMessage
}

type Pause struct{ Duration *IntOrString }

type CanaryStep struct {
	SetWeight *int32
	Pause     *Pause
	Plugin    *PluginStep
}

type CanaryStrategy struct {
	Steps    []CanaryStep
	MaxSurge *IntOrString
}

type RolloutStrategy struct{ Canary *CanaryStrategy }

type RolloutSpec struct {
	Replicas                *int32
	Template                PodTemplateSpec
	Strategy                RolloutStrategy
	Paused                  bool
	ProgressDeadlineSeconds *int32
}

type StepPluginStatus struct {
	Index                            int32
	Name, Operation, Phase, Message  string
	StartedAt, UpdatedAt, FinishedAt *MetaTime
	Backoff                          string
	Executions                       int32
	Disabled                         bool
	Status                           json.RawMessage
}

type RolloutStatus struct {
	Abort              bool
	CurrentStepIndex   *int32
	StepPluginStatuses []StepPluginStatus
	Phase, Message     string
	ObservedGeneration string
}

type Rollout struct {
	TypeMeta
	ObjectMeta
	Spec   RolloutSpec
	Status RolloutStatus
}

type RpcStepContext struct {
	PluginName     string
	Config, Status json.RawMessage
}

type RunArgs struct {
	Rollout *Rollout
	Context *RpcStepContext
}

// Corpus-only shapes.

type Basics struct {
	B       bool
	I       int
	I8      int8
	I64     int64
	U       uint
	U8      uint8
	U64     uint64
	F32     float32
	F64     float64
	C       complex128
	S       string
	Bs      []byte
	Raw     json.RawMessage
	Ptr     *int
	PtrZero *int
	Any     any
	private int
	Ch      chan int
	Fn      func()
}

type Inner struct {
	Name  string
	Score float64
	Tags  []string
}

type Outer struct {
	Title    string
	Inner    Inner
	InnerPtr *Inner
	Empty    struct{}
	Items    []Inner
	ByName   map[string]Inner
	Grid     [][]int
	Fixed    [3]int
	Pair     [2][2]string
	Digest   [4]byte
	NilMap   map[string]int
	EmptyMap map[string]int
	NegZero  float64
}

type Tree struct {
	Value    int
	Children []*Tree
	Next     *Tree
}

type Schema struct {
	Type       string
	Properties map[string]Schema
	Items      *Schema
}

type Point struct{ X, Y int }

type Envelope struct {
	Kind    string
	Payload any
	Tail    int
}

type Times struct {
	UTC, Fixed, SubMinute, NegSubMinute, Nanos, Zero time.Time
	Meta                                             *MetaTime
	List                                             []time.Time
}

// Stamp has only MarshalBinary: gob describes it as BinaryMarshalerT.
type Stamp struct{ n uint32 }

func (s Stamp) MarshalBinary() ([]byte, error) { return binary.BigEndian.AppendUint32(nil, s.n), nil }

func (s *Stamp) UnmarshalBinary(b []byte) error {
	if len(b) != 4 {
		return errors.New("stamp: bad length")
	}
	s.n = binary.BigEndian.Uint32(b)
	return nil
}

type Stamped struct {
	Label string
	At    Stamp
}

type Big struct {
	Names  []string
	Blob   []byte
	Counts map[string]int64
	Rows   []Inner
}
