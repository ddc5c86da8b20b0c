// Runs an Argo CD health script in gopher-lua, the Lua engine of Argo CD (v3.2.11 pins gopher-lua v1.1.1), the way
// Argo CD's util/lua (runLuaWithResourceActionParameters) runs it: a fresh state per object, all standard
// libraries only with useOpenLibs, else package, base and table alone; the object as a Lua table (JSON numbers as
// numbers, arrays as tables); a 1 s deadline. For test/unit/observe/zone-health-lua.test.ts.
//
// Usage: lua-health SCRIPT open|closed OBJECTS.json [NOW]. With NOW (seconds since the epoch), os.time() without
// arguments answers NOW, so that the tests' clock decides the deadlines. Prints one JSON line per object:
// {"status": …, "message": …} or {"error": …}.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	lua "github.com/yuin/gopher-lua"
)

func decodeValue(L *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case []any:
		t := L.CreateTable(len(v), 0)
		for _, item := range v {
			t.Append(decodeValue(L, item))
		}
		return t
	case map[string]any:
		t := L.CreateTable(0, len(v))
		for k, item := range v {
			t.RawSetH(lua.LString(k), decodeValue(L, item))
		}
		return t
	}
	return lua.LNil
}

type result struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

func run(script string, openLibs bool, object map[string]any, now *int64) result {
	L := lua.NewState(lua.Options{SkipOpenLibs: !openLibs})
	defer L.Close()
	for _, pair := range []struct {
		n string
		f lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := L.CallByParam(lua.P{Fn: L.NewFunction(pair.f), NRet: 0, Protect: true}, lua.LString(pair.n)); err != nil {
			return result{Error: err.Error()}
		}
	}
	if osTable, ok := L.GetGlobal("os").(*lua.LTable); ok && now != nil {
		L.SetField(osTable, "time", L.NewFunction(func(L *lua.LState) int {
			if L.GetTop() != 0 {
				L.RaiseError("os.time with arguments: the health checks do not call it so")
			}
			L.Push(lua.LNumber(*now))
			return 1
		}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	L.SetContext(ctx)
	L.SetGlobal("obj", decodeValue(L, object))
	if err := L.DoString(script); err != nil {
		return result{Error: err.Error()}
	}
	table, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		return result{Error: fmt.Sprintf("the script returned %s, not a table", L.Get(-1).Type())}
	}
	return result{Status: table.RawGetString("status").String(), Message: table.RawGetString("message").String()}
}

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: lua-health SCRIPT open|closed OBJECTS.json [NOW]")
		os.Exit(2)
	}
	script, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	raw, err := os.ReadFile(os.Args[3])
	if err != nil {
		panic(err)
	}
	var objects []map[string]any
	if err := json.Unmarshal(raw, &objects); err != nil {
		panic(err)
	}
	var now *int64
	if len(os.Args) > 4 {
		n, err := strconv.ParseInt(os.Args[4], 10, 64)
		if err != nil {
			panic(err)
		}
		now = &n
	}
	out := json.NewEncoder(os.Stdout)
	for _, object := range objects {
		if err := out.Encode(run(string(script), os.Args[2] == "open", object, now)); err != nil {
			panic(err)
		}
	}
}
