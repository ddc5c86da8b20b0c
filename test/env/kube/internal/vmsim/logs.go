package vmsim

import (
	"context"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// VictoriaLogs zones (docs/zone-kinds.md): beside the real operator only, which reconciles VLCluster and VLAgent
// (operator.victoriametrics.com/v1) into vlinsert/vlselect Deployments, a vlstorage StatefulSet, a vlagent
// StatefulSet and their Services and statuses. The data plane plays those Pods with real processes: one
// single-node victoria-logs per VLCluster (serving /insert/..., /internal/insert and /select/logsql/...), one
// vlagent per VLAgent.
var (
	gvrVLCluster = schema.GroupVersionResource{Group: group, Version: "v1", Resource: "vlclusters"}
	gvrVLAgent   = schema.GroupVersionResource{Group: group, Version: "v1", Resource: "vlagents"}
)

// logsVersion resolves a VictoriaLogs image tag ("v1.52.1") to built binaries; "" means the default version.
func (s *Sim) logsVersion(tag string) (string, LogsBinaries, error) {
	if tag == "" {
		tag = s.cfg.DefaultLogsVersion
	}
	if b, ok := s.cfg.LogsBinaries[tag]; ok {
		return tag, b, nil
	}
	have := make([]string, 0, len(s.cfg.LogsBinaries))
	for k := range s.cfg.LogsBinaries {
		have = append(have, k)
	}
	sort.Strings(have)
	return tag, LogsBinaries{}, fmt.Errorf("image tag %q cannot be pulled: the sandbox has VictoriaLogs %s only", tag, strings.Join(have, ", "))
}

// vlclusterProcess maps a VLCluster to one victoria-logs process on the port its three components declare:
// version from spec.clusterVersion (or vlstorage.image.tag), flags from vlstorage's retention fields and the
// extraArgs of vlstorage, vlselect and vlinsert (operator factory/vlcluster/vlstorage.go buildVLStoragePodSpec).
func (s *Sim) vlclusterProcess(obj *unstructured.Unstructured) (desired, error) {
	ns, name := obj.GetNamespace(), obj.GetName()
	tag, _, _ := unstructured.NestedString(obj.Object, "spec", "clusterVersion")
	if t, _, _ := unstructured.NestedString(obj.Object, "spec", "vlstorage", "image", "tag"); t != "" {
		tag = t
	}
	port, err := s.portFor(gvrVLCluster, ns, name)
	if err != nil {
		return desired{}, err
	}
	version, bin, verr := s.logsVersion(tag)
	if verr != nil {
		return desired{port: port, version: version, unavailable: verr}, nil
	}
	dir, err := dataDir(s.cfg.StateDir, "vlcluster", ns, name)
	if err != nil {
		return desired{}, err
	}
	args := append(s.cfg.listenArgs(port), "-storageDataPath="+dir)
	flagsFrom := len(args)
	for field, flag := range map[string]string{
		"retentionPeriod":                 "retentionPeriod",
		"futureRetention":                 "futureRetention",
		"retentionMaxDiskSpaceUsageBytes": "retention.maxDiskSpaceUsageBytes",
	} {
		if v, _, _ := unstructured.NestedString(obj.Object, "spec", "vlstorage", field); v != "" {
			args = append(args, fmt.Sprintf("-%s=%s", flag, v))
		}
	}
	sort.Strings(args[flagsFrom:])
	merged := map[string]interface{}{}
	for _, component := range []string{"vlstorage", "vlselect", "vlinsert"} {
		extra, _, _ := unstructured.NestedMap(obj.Object, "spec", component, "extraArgs")
		for k, v := range extra {
			merged[k] = v
		}
	}
	args = append(args, flagArgs(merged)...)
	return desired{version: version, binary: bin.VictoriaLogs, args: args, port: port}, nil
}

// vlagentProcess maps a VLAgent to one vlagent on spec.port, with the spec's -remoteWrite.url list unchanged and in
// order (the operator's container args: its queue folders <N>_<XXH64(url)> are the real ones), -tmpDataPath a
// folder of its own (the operator's /vlagent-data volume: queues under vlagent-remotewrite-data/persistent-queue),
// and the service proxy that stands for cluster DNS.
func (s *Sim) vlagentProcess(obj *unstructured.Unstructured) (desired, error) {
	ns, name := obj.GetNamespace(), obj.GetName()
	port, err := s.portFor(gvrVLAgent, ns, name)
	if err != nil {
		return desired{}, err
	}
	tag, _, _ := unstructured.NestedString(obj.Object, "spec", "image", "tag")
	version, bin, verr := s.logsVersion(tag)
	if verr != nil {
		return desired{port: port, version: version, unavailable: verr}, nil
	}
	dir, err := dataDir(s.cfg.StateDir, "vlagent", ns, name)
	if err != nil {
		return desired{}, err
	}
	args := append(s.cfg.listenArgs(port), "-tmpDataPath="+dir)
	urls, invalid := s.remoteWriteArgs(obj)
	if invalid != nil {
		return desired{invalid: invalid}, nil
	}
	args = append(args, urls...)
	if v, _, _ := unstructured.NestedString(obj.Object, "spec", "remoteWriteSettings", "flushInterval"); v != "" {
		args = append(args, "-remoteWrite.flushInterval="+v)
	}
	if s.proxy != nil {
		args = append(args, "-remoteWrite.proxyURL="+s.proxy.url())
	}
	extra, _, _ := unstructured.NestedMap(obj.Object, "spec", "extraArgs")
	args = append(args, flagArgs(extra)...)
	return desired{version: version, binary: bin.VLAgent, args: args, port: port}, nil
}

// vlstoragePodUID is the UID of the operator's first vlstorage Pod of a VLCluster, "" while there is none: the
// zone's process restarts when that Pod is replaced (a vlstorage flag change), as a container would.
func (s *Sim) vlstoragePodUID(ctx context.Context, obj *unstructured.Unstructured) string {
	pod, err := s.kube.CoreV1().Pods(obj.GetNamespace()).Get(ctx, "vlstorage-"+obj.GetName()+"-0", metav1.GetOptions{})
	if err != nil || pod.DeletionTimestamp != nil {
		return ""
	}
	return string(pod.UID)
}
