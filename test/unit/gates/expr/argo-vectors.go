//go:build ignore

// Records what the real expr-lang and Argo Rollouts' utils/evaluate make of the cases in
// argo-vectors.cases.json, so that the TypeScript evaluator is tested against them (argo-vectors.json).
// It needs github.com/argoproj/argo-rollouts, so run it from a module that requires it, e.g.:
//
//	dir=$(mktemp -d) && cp test/conformance/go.mod test/conformance/go.sum "$dir" &&
//	cp test/unit/gates/expr/argo-vectors.go test/unit/gates/expr/argo-vectors.cases.json "$dir" &&
//	(cd "$dir" && GOFLAGS=-mod=mod go run argo-vectors.go) > test/unit/gates/expr/argo-vectors.json
package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	"github.com/argoproj/argo-rollouts/utils/evaluate"
	"github.com/expr-lang/expr"
	"github.com/sirupsen/logrus"
)

type cases struct {
	Results    map[string]json.RawMessage `json:"results"`
	Values     []valueCase                `json:"values"`
	Conditions []valueCase                `json:"conditions"`
	Metrics    []metricCase               `json:"metrics"`
}

type valueCase struct {
	Expr   string `json:"expr"`
	Result string `json:"result,omitempty"`
}

type metricCase struct {
	Success string `json:"success,omitempty"`
	Failure string `json:"failure,omitempty"`
	Result  string `json:"result,omitempty"`
}

type outcome struct {
	Expr    string `json:"expr,omitempty"`
	Success string `json:"success,omitempty"`
	Failure string `json:"failure,omitempty"`
	Result  string `json:"result,omitempty"`
	Type    string `json:"type,omitempty"`
	Value   string `json:"value,omitempty"`
	Phase   string `json:"phase,omitempty"`
	Error   string `json:"error,omitempty"`
}

func decode(c cases, name string) any {
	if name == "" {
		return nil
	}
	raw, ok := c.Results[name]
	if !ok {
		panic("unknown result " + name)
	}
	var value any
	if err := json.Unmarshal(raw, &value); err != nil {
		panic(err)
	}
	return value
}

func render(value any) string {
	switch v := value.(type) {
	case nil:
		return "nil"
	case float64:
		if math.IsNaN(v) {
			return "NaN"
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		return v
	case bool, int, int64:
		return fmt.Sprint(v)
	default:
		out, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(out)
	}
}

// evalValue evaluates like EvalCondition but returns the value: the same `result` binding, no functions.
func evalValue(source string, result any) (value any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	env := map[string]any{"result": result}
	program, err := expr.Compile(source, expr.Env(env))
	if err != nil {
		return nil, err
	}
	return expr.Run(program, env)
}

func main() {
	var c cases
	raw, err := os.ReadFile("argo-vectors.cases.json")
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		panic(err)
	}
	var values, conditions, metrics []outcome
	for _, vc := range c.Values {
		value, err := evalValue(vc.Expr, decode(c, vc.Result))
		o := outcome{Expr: vc.Expr, Result: vc.Result}
		if err != nil {
			o.Error = err.Error()
		} else {
			o.Type = fmt.Sprintf("%T", value)
			o.Value = render(value)
		}
		values = append(values, o)
	}
	for _, cc := range c.Conditions {
		ok, err := evaluate.EvalCondition(decode(c, cc.Result), cc.Expr)
		o := outcome{Expr: cc.Expr, Result: cc.Result, Value: fmt.Sprint(ok)}
		if err != nil {
			o.Value = ""
			o.Error = err.Error()
		}
		conditions = append(conditions, o)
	}
	for _, mc := range c.Metrics {
		metric := v1alpha1.Metric{SuccessCondition: mc.Success, FailureCondition: mc.Failure}
		phase, err := evaluate.EvaluateResult(decode(c, mc.Result), metric, *logrus.NewEntry(logrus.New()))
		o := outcome{Success: mc.Success, Failure: mc.Failure, Result: mc.Result, Phase: string(phase)}
		if err != nil {
			o.Error = err.Error()
		}
		metrics = append(metrics, o)
	}
	version := "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/expr-lang/expr" || dep.Path == "github.com/argoproj/argo-rollouts" {
				version += " " + dep.Path + "@" + dep.Version
			}
		}
	}
	out := json.NewEncoder(os.Stdout)
	out.SetIndent("", "  ")
	_ = out.Encode(map[string]any{
		"generatedWith": version,
		"results":       c.Results,
		"values":        values,
		"conditions":    conditions,
		"metrics":       metrics,
	})
}
