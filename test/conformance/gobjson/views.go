package gobjson

import (
	"encoding/json"
	"fmt"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
)

// A selector says which parts of a Kubernetes JSON object a typed view keeps: `all` keeps the
// whole subtree, a map keeps the listed keys (applied to every element when the value is an array).
type selector map[string]any

const all = true

var metadataSelector = selector{
	"name": all, "namespace": all, "uid": all, "generation": all, "resourceVersion": all,
	"labels": all, "annotations": all, "creationTimestamp": all,
}

var rolloutSelector = selector{
	"metadata": metadataSelector,
	"spec": selector{
		"template": selector{"metadata": selector{"labels": all, "annotations": all}},
		"strategy": selector{"canary": selector{"steps": selector{
			"setWeight": all,
			"pause":     selector{"duration": all},
			"plugin":    selector{"name": all, "config": all},
		}}},
	},
	"status": selector{
		"abort": all, "abortedAt": all, "currentStepIndex": all, "currentPodHash": all,
		"stableRS": all, "phase": all, "message": all,
		"canary": selector{"stepPluginStatuses": all},
	},
}

var analysisRunSelector = selector{
	"metadata": metadataSelector,
	"spec": selector{
		"args":      selector{"name": all, "value": all},
		"metrics":   selector{"name": all},
		"terminate": all,
		"dryRun":    selector{"metricName": all},
	},
	"status": selector{
		"phase": all, "message": all,
		"metricResults": selector{
			"name": all, "phase": all, "count": all, "successful": all, "failed": all,
			"inconclusive": all, "error": all, "consecutiveError": all, "measurements": all,
		},
	},
}

var metricSelector = selector{
	"name": all, "interval": all, "initialDelay": all, "count": all, "successCondition": all,
	"failureCondition": all, "failureLimit": all, "inconclusiveLimit": all,
	"consecutiveErrorLimit": all, "consecutiveSuccessLimit": all,
	"provider": selector{"plugin": all},
}

// RolloutView is the typed view of a Rollout the TS adapters must produce.
func RolloutView(r *v1alpha1.Rollout) any { return view(r, rolloutSelector) }

// AnalysisRunView is the typed view of an AnalysisRun.
func AnalysisRunView(run *v1alpha1.AnalysisRun) any { return view(run, analysisRunSelector) }

// MetricView is the typed view of a Metric.
func MetricView(m v1alpha1.Metric) any { return view(m, metricSelector) }

// MeasurementView is the Measurement's whole Kubernetes JSON.
func MeasurementView(m v1alpha1.Measurement) any { return view(m, nil) }

// view panics when the object cannot be marshalled: test payloads are always valid objects.
func view(obj any, sel selector) any {
	data, err := json.Marshal(obj)
	if err != nil {
		panic(fmt.Sprintf("gobjson: json.Marshal of %T: %v", obj, err))
	}
	generic, err := ParseJSON(data)
	if err != nil {
		panic(err)
	}
	if sel == nil {
		return generic
	}
	return apply(generic, sel)
}

func apply(v any, sel selector) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for key, rule := range sel {
			child, ok := x[key]
			if !ok {
				continue
			}
			if nested, isSelector := rule.(selector); isSelector {
				out[key] = apply(child, nested)
			} else {
				out[key] = child
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, element := range x {
			out[i] = apply(element, sel)
		}
		return out
	}
	return nil // a scalar where the selector expects structure: not part of the view
}
