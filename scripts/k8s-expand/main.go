// k8s-expand applies Kubernetes' own variable expansion to a container, as the kubelet does
// before it starts it: the reference that crates/cli/tests/it/k8s.rs checks `volley k8s
// manifest`'s escaping against (a `$` typed in a flag must reach the pod as typed).
//
// It reads one container object (JSON: the "env" and "args" of a pod template's container) on
// stdin, and prints {"env": {NAME: value}, "args": [...]} as the container would see them. The
// environment is built as the kubelet's makeEnvironmentVariables builds it (pkg/kubelet/
// kubelet_pods.go): each `value` expanded against the variables defined before it; a variable
// from `valueFrom` takes its value from a NAME=VALUE argument (e.g. JOB_COMPLETION_INDEX=3, the
// index the Job controller's annotation gives). The args are expanded against that environment
// as kubecontainer.ExpandContainerCommandAndArgs does (pkg/kubelet/container/helpers.go).
//
//	go build -o target/tools/k8s-expand ./scripts/k8s-expand   (scripts/test.sh does this)
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"k8s.io/kubernetes/third_party/forked/golang/expansion"
)

type envVar struct {
	Name      string          `json:"name"`
	Value     string          `json:"value"`
	ValueFrom json.RawMessage `json:"valueFrom"`
}

type container struct {
	Env  []envVar `json:"env"`
	Args []string `json:"args"`
}

func main() {
	given := map[string]string{}
	for _, a := range os.Args[1:] {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "k8s-expand: %q: give NAME=VALUE for a variable set by valueFrom\n", a)
			os.Exit(2)
		}
		given[k] = v
	}
	var c container
	if err := json.NewDecoder(os.Stdin).Decode(&c); err != nil {
		fmt.Fprintf(os.Stderr, "k8s-expand: stdin is not a container object: %v\n", err)
		os.Exit(2)
	}
	env := map[string]string{}
	mapping := expansion.MappingFuncFor(env)
	for _, e := range c.Env {
		v := e.Value
		if v != "" {
			v = expansion.Expand(v, mapping)
		} else if e.ValueFrom != nil {
			g, ok := given[e.Name]
			if !ok {
				fmt.Fprintf(os.Stderr, "k8s-expand: %s comes from valueFrom: give %s=VALUE\n", e.Name, e.Name)
				os.Exit(2)
			}
			v = g
		}
		env[e.Name] = v
	}
	args := make([]string, 0, len(c.Args))
	for _, a := range c.Args {
		args = append(args, expansion.Expand(a, mapping))
	}
	out, _ := json.Marshal(map[string]any{"env": env, "args": args})
	fmt.Println(string(out))
}
