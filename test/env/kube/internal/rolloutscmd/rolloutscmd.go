// Package rolloutscmd exposes the real `kubectl argo rollouts` promote / abort / retry / status
// commands (from github.com/argoproj/argo-rollouts/pkg/kubectl-argo-rollouts). The plugin binary
// itself cannot be built from the module zip: its dashboard embeds UI assets that are not in it.
package rolloutscmd

import (
	"os"

	"github.com/argoproj/argo-rollouts/pkg/kubectl-argo-rollouts/cmd/abort"
	"github.com/argoproj/argo-rollouts/pkg/kubectl-argo-rollouts/cmd/promote"
	"github.com/argoproj/argo-rollouts/pkg/kubectl-argo-rollouts/cmd/retry"
	"github.com/argoproj/argo-rollouts/pkg/kubectl-argo-rollouts/cmd/status"
	"github.com/argoproj/argo-rollouts/pkg/kubectl-argo-rollouts/options"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

func New() *cobra.Command {
	o := options.NewArgoRolloutsOptions(genericclioptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	cmd := &cobra.Command{Use: "rollouts", Short: "kubectl argo rollouts promote|abort|retry|status"}
	o.AddKubectlFlags(cmd)
	cmd.AddCommand(promote.NewCmdPromote(o), abort.NewCmdAbort(o), retry.NewCmdRetry(o), status.NewCmdStatus(o))
	return cmd
}
