package vmsim

import (
	"context"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// portFor is the loopback port of an object's process: the port its spec declares
// (spec.vmselect.port of a VMCluster — the single zone process serves every component —,
// spec.vlselect.port of a VLCluster, spec.port of a VMSingle, VMAgent, VLAgent or VMAuth), else a free port. Objects are read on demand so that a
// vmagent URL naming a zone gets the zone's declared port even before the zone is reconciled.
func (s *Sim) portFor(gvr schema.GroupVersionResource, ns, name string) (int, error) {
	key := gvr.Resource + "/" + ns + "/" + name
	s.ports.mu.Lock()
	port, ok := s.ports.byKey[key]
	s.ports.mu.Unlock()
	if ok {
		return port, nil
	}
	if s.dyn != nil {
		if obj, err := s.dyn.Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{}); err == nil {
			if declared := declaredPort(gvr, obj); declared > 0 {
				s.ports.mu.Lock()
				s.ports.byKey[key] = declared
				s.ports.mu.Unlock()
				return declared, nil
			}
		}
	}
	return s.ports.get(key)
}

func declaredPort(gvr schema.GroupVersionResource, obj *unstructured.Unstructured) int {
	path := []string{"spec", "port"}
	switch gvr {
	case gvrCluster:
		path = []string{"spec", "vmselect", "port"}
	case gvrVLCluster:
		path = []string{"spec", "vlselect", "port"}
	}
	raw, found, _ := unstructured.NestedFieldNoCopy(obj.Object, path...)
	if !found {
		return 0
	}
	switch v := raw.(type) {
	case string:
		port, _ := strconv.Atoi(v)
		return port
	case int64:
		return int(v)
	case float64:
		return int(v)
	}
	return 0
}
