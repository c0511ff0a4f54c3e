package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-timetypes/timetypes"
	"github.com/hashicorp/terraform-plugin-framework/function"
)

var _ function.Function = &durationMSFunction{}

// NewDurationMSFunction returns provider::redlock::duration_ms(d): a Go duration string
// ("30s", "1m30s", "500ms") in whole milliseconds. Terraform >= 1.8 only; the modules,
// which must work with terraform 1.5, read redlock_master's computed max_lock_ttl_ms instead.
func NewDurationMSFunction() function.Function { return &durationMSFunction{} }

type durationMSFunction struct{}

func (f *durationMSFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "duration_ms"
}

func (f *durationMSFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "A Go duration in milliseconds",
		MarkdownDescription: "Returns the Go duration `duration` (`\"30s\"`, `\"1m30s\"`, `\"1500ms\"`, the format of " +
			"`max_lock_ttl` and `restart_delay`) as a whole number of milliseconds (a fraction of a millisecond is " +
			"dropped), e.g. for a lock client's TTL setting. Needs Terraform 1.8 or later. The modules in this " +
			"repository support terraform 1.5, so they read the computed `max_lock_ttl_ms` and `restart_delay_ms` " +
			"attributes of `redlock_master` (and of the `redlock_host_config` data source) instead; do the same when " +
			"your configuration must run with terraform < 1.8.",
		Parameters: []function.Parameter{
			function.StringParameter{
				Name:                "duration",
				CustomType:          timetypes.GoDurationType{},
				MarkdownDescription: "A Go duration string: numbers with a unit each (`ns`, `us`, `ms`, `s`, `m`, `h`), e.g. `\"1m30s\"`.",
			},
		},
		Return: function.Int64Return{},
	}
}

func (f *durationMSFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var v timetypes.GoDuration
	resp.Error = function.ConcatFuncErrors(req.Arguments.Get(ctx, &v))
	if resp.Error != nil {
		return
	}
	d, diags := v.ValueGoDuration()
	if diags.HasError() {
		resp.Error = function.FuncErrorFromDiags(ctx, diags)
		return
	}
	resp.Error = function.ConcatFuncErrors(resp.Result.Set(ctx, d.Milliseconds()))
}
