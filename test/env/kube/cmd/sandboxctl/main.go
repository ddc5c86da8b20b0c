// sandboxctl holds the Go parts of the vmzones sandbox: certificate generation, the simulated
// kubelet, the simulated VictoriaMetrics operator and the real `kubectl argo rollouts` commands.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"vmzones.local/test/env/kube/internal/kubelet"
	"vmzones.local/test/env/kube/internal/pki"
	"vmzones.local/test/env/kube/internal/rolloutscmd"
	"vmzones.local/test/env/kube/internal/vmsim"
)

const usage = `usage: sandboxctl <command> [flags]
  pki --dir DIR                                  generate CA, serving/admin certs, SA key
  kubelet --kubeconfig F [--node NAME] [--played-images P1,P2] [--pod-ip IP]  run the simulated kubelet
  vmoperator --kubeconfig F --config F           run the simulated VictoriaMetrics operator
  rollouts promote|abort|retry|status ...        the real kubectl-argo-rollouts commands`

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "pki":
		fs := flag.NewFlagSet("pki", flag.ExitOnError)
		dir := fs.String("dir", "", "output directory")
		_ = fs.Parse(os.Args[2:])
		err = pki.Generate(*dir)
	case "kubelet":
		fs := flag.NewFlagSet("kubelet", flag.ExitOnError)
		kubeconfig := fs.String("kubeconfig", "", "kubeconfig path")
		node := fs.String("node", "sandbox-node", "node name")
		played := fs.String("played-images", "", "comma-separated image prefixes of sidecars the sandbox plays itself")
		podIP := fs.String("pod-ip", kubelet.DefaultPodIP, "the address every Pod reports (a non-loopback one lets kube-apiserver proxy to Pods)")
		_ = fs.Parse(os.Args[2:])
		err = runKubelet(*kubeconfig, *node, *played, *podIP)
	case "vmoperator":
		fs := flag.NewFlagSet("vmoperator", flag.ExitOnError)
		kubeconfig := fs.String("kubeconfig", "", "kubeconfig path")
		config := fs.String("config", "", "simulator config (JSON)")
		_ = fs.Parse(os.Args[2:])
		err = runOperator(*kubeconfig, *config)
	case "rollouts":
		cmd := rolloutscmd.New()
		cmd.SetArgs(os.Args[2:])
		err = cmd.Execute()
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		log.Fatalf("sandboxctl %s: %v", os.Args[1], err)
	}
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
}

func runKubelet(kubeconfig, node, played, podIP string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	k := kubelet.New(client, node)
	k.PodIP = podIP
	if played != "" {
		k.PlayedImages = strings.Split(played, ",")
	}
	return k.Run(ctx)
}

func runOperator(kubeconfig, configPath string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	simCfg, err := vmsim.LoadConfig(configPath)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	return vmsim.New(simCfg, dyn, kube).Run(ctx)
}
