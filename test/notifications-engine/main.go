// Runs the vmzones notification triggers and templates (manifests/notifications/) the way Argo Rollouts v1.10.1's
// notification engine does, offline: the trigger conditions through notifications-engine's own pkg/triggers
// service (expr-lang), and each triggered template's message and webhook body through Go's text/template with
// sprig's functions minus env and expandenv, as notifications-engine's pkg/templates compiles them. For
// test/unit/manifests/notifications.test.ts; the real controller delivering them is test/e2e/notifications.
//
// Usage: notifications-engine CONFIGMAP.yaml CASES.json WEBHOOK, CASES = [{"trigger": …, "vars": {"rollout": …,
// "analysisRuns": …}}]. Prints one JSON line per case: {"sent": [{"template", "oncePer", "message", "body"}],
// "error"?}, the body being the template's webhook WEBHOOK.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"github.com/argoproj/notifications-engine/pkg/triggers"
	"sigs.k8s.io/yaml"
)

type configMap struct {
	Data map[string]string `json:"data"`
}

type notificationTemplate struct {
	Message string `json:"message"`
	Webhook map[string]struct {
		Method string `json:"method"`
		Body   string `json:"body"`
	} `json:"webhook"`
}

type sent struct {
	Template string `json:"template"`
	OncePer  string `json:"oncePer"`
	Message  string `json:"message"`
	Body     string `json:"body"`
}

type outcome struct {
	Sent  []sent `json:"sent"`
	Error string `json:"error,omitempty"`
}

func render(name, text string, funcs template.FuncMap, vars map[string]any) (string, error) {
	t, err := template.New(name).Funcs(funcs).Parse(text)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	if err := t.Execute(&out, vars); err != nil {
		return "", err
	}
	return out.String(), nil
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: notifications-engine CONFIGMAP.yaml CASES.json WEBHOOK")
		os.Exit(2)
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	var cm configMap
	if err := yaml.Unmarshal(raw, &cm); err != nil {
		panic(err)
	}
	conditions := map[string][]triggers.Condition{}
	for key, value := range cm.Data {
		if name, ok := strings.CutPrefix(key, "trigger."); ok {
			var list []triggers.Condition
			if err := yaml.Unmarshal([]byte(value), &list); err != nil {
				panic(fmt.Errorf("%s: %w", key, err))
			}
			conditions[name] = list
		}
	}
	service, err := triggers.NewService(conditions)
	if err != nil {
		panic(err)
	}
	funcs := sprig.TxtFuncMap()
	delete(funcs, "env")
	delete(funcs, "expandenv")

	raw, err = os.ReadFile(os.Args[2])
	if err != nil {
		panic(err)
	}
	var cases []struct {
		Trigger string         `json:"trigger"`
		Vars    map[string]any `json:"vars"`
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		panic(err)
	}
	out := json.NewEncoder(os.Stdout)
	for _, c := range cases {
		result := outcome{Sent: []sent{}}
		results, err := service.Run(c.Trigger, c.Vars)
		if err != nil {
			result.Error = err.Error()
		}
		for _, r := range results {
			if !r.Triggered {
				continue
			}
			for _, name := range r.Templates {
				var t notificationTemplate
				if err := yaml.Unmarshal([]byte(cm.Data["template."+name]), &t); err != nil {
					panic(fmt.Errorf("template.%s: %w", name, err))
				}
				message, err := render(name, t.Message, funcs, c.Vars)
				if err != nil {
					result.Error = err.Error()
					continue
				}
				body, err := render(name, t.Webhook[os.Args[3]].Body, funcs, c.Vars)
				if err != nil {
					result.Error = err.Error()
					continue
				}
				result.Sent = append(result.Sent, sent{Template: name, OncePer: r.OncePer, Message: message, Body: body})
			}
		}
		if err := out.Encode(result); err != nil {
			panic(err)
		}
	}
}
