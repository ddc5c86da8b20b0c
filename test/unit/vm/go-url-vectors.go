//go:build ignore

// Prints, as JSON, what vmagent hashes for each remote-write URL below: Go's url.Parse with RawQuery and
// Fragment cleared, then URL.String() (see plugin/vm/go-url.ts). Regenerate go-url-vectors.json with
//   go run test/unit/vm/go-url-vectors.go > test/unit/vm/go-url-vectors.json
package main

import (
	"encoding/json"
	"net/url"
	"os"
	"runtime"
)

var inputs = []string{
	"http://127.0.0.1:18428/api/v1/write",
	"http://vminsert-zone-a.vm.svc:8480/insert/0/prometheus/api/v1/write",
	"http://user:p%40ss@127.0.0.1:18429/insert/0/prometheus/api/v1/write?extra_label=zone=a#frag",
	"http://127.0.0.1:18430/api/v1/write?",
	"http://127.0.0.1:18430/api/v1/write?#frag",
	"http://127.0.0.1:18430/api/v1/write??",
	"http://127.0.0.1:18430/api/v1/write?a?",
	"HTTP://LocalHost:18431/a%2fb/c%20d",
	"https://127.0.0.1:18432/api/v1/write/",
	"http://[::1]:18433/write?x=1&y=2",
	"http://[::ffff:1.2.3.4]:80/write",
	"http://127.0.0.1:18434/p/ä/x",
	"http://127.0.0.1/p/a b",
	"http://127.0.0.1/p/%7e%7E~/q",
	"http://127.0.0.1/p/a'b!c$d&e(f)g*h+i,j;k=l:m@n[o]p",
	"http://127.0.0.1/p\"q<r>s{t}u|v^w`x",
	"http://127.0.0.1/%C3%A4%zz",
	"http://127.0.0.1/ok#bad%zz",
	"http://127.0.0.1",
	"http://127.0.0.1:",
	"http://127.0.0.1:80x/p",
	"http://h:1:2/p",
	"http://user@host/p",
	"http://us%3Aer:pa:ss@host/p",
	"http://u!$&'()*+,;=~._-:p%2F%3F%40@host/p",
	"http://u@s@er:pw@host/p",
	"http://us er@host/p",
	"http://ünï.example/p",
	"http://h%C3%BCst/p",
	"http://h%41st/p",
	"http://ho st/p",
	"http://ho\"st/p",
	"http://[1.2.3.4]/p",
	"http://[::1/p",
	"http://x[::1]/p",
	"http://[fe80::1%25en0]/p",
	"ftp://host/p",
	"host:8428/api/v1/write",
	"//host/p",
	"http:/p",
	"http:p",
	"http://h/p\t",
	"Https://H/P",
}

type vector struct {
	Input  string `json:"input"`
	Output string `json:"output,omitempty"`
	Error  bool   `json:"error,omitempty"`
}

func main() {
	vectors := []vector{}
	for _, raw := range inputs {
		u, err := url.Parse(raw)
		if err == nil && (u.Scheme != "http" && u.Scheme != "https" || u.Host == "") {
			// vmagent refuses these (unsupported scheme, or nowhere to send).
			err = os.ErrInvalid
		}
		if err != nil {
			vectors = append(vectors, vector{Input: raw, Error: true})
			continue
		}
		u.RawQuery = ""
		u.Fragment = ""
		vectors = append(vectors, vector{Input: raw, Output: u.String()})
	}
	out := json.NewEncoder(os.Stdout)
	out.SetIndent("", "  ")
	_ = out.Encode(map[string]any{"go": runtime.Version(), "vectors": vectors})
}
