package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/function"
)

var _ function.Function = &quorumFunction{}

// NewQuorumFunction returns provider::redlock::quorum(n): the majority of n masters that
// Redlock needs (n/2 + 1). Terraform >= 1.8 only; the modules compute it themselves.
func NewQuorumFunction() function.Function { return &quorumFunction{} }

type quorumFunction struct{}

// Quorum is the number of masters Redlock must lock on out of n: a strict majority.
func Quorum(n int64) int64 { return n/2 + 1 }

func (f *quorumFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "quorum"
}

func (f *quorumFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "Majority of n Redlock masters",
		MarkdownDescription: "Returns `floor(n/2) + 1`: how many of `n` independent masters a Redlock client must " +
			"lock on. `n` must be at least 1; an odd `n` (3, 5, 7) tolerates the most failures for its size. " +
			"Needs Terraform 1.8 or later.",
		Parameters: []function.Parameter{
			function.Int64Parameter{Name: "n", MarkdownDescription: "Number of independent masters (>= 1)."},
		},
		Return: function.Int64Return{},
	}
}

func (f *quorumFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var n int64
	resp.Error = function.ConcatFuncErrors(req.Arguments.Get(ctx, &n))
	if resp.Error != nil {
		return
	}
	if n < 1 {
		resp.Error = function.NewArgumentFuncError(0, fmt.Sprintf("n is %d: a deployment needs at least 1 master (5 is the reference)", n))
		return
	}
	resp.Error = function.ConcatFuncErrors(resp.Result.Set(ctx, Quorum(n)))
}
