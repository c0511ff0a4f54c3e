package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
)

// masterTimeoutsAttribute is redlock_master's `timeouts`: how long each operation that can
// wait may take. Read does not wait (a master that does not answer is reported as such).
func masterTimeoutsAttribute(ctx context.Context) schema.Attribute {
	a := timeouts.Attributes(ctx, timeouts.Opts{Create: true, Update: true, Delete: true,
		CreateDescription: "How long create may take (duration, default `\"5m\"`), including waiting out `restart_delay` " +
			"when the data dir shows an unclean stop.",
		UpdateDescription: "How long an in-place update may take (duration, default `\"5m\"`): turning the AOF back on waits " +
			"until its rewrite has reached the disk, and the supervisor's reload is awaited.",
		DeleteDescription: "How long destroy may take (duration, default `\"10m\"`), including the clean stop and the wait " +
			"for the master's locks to expire (see `keep_data_on_destroy`). A replacement's destroy half uses it too.",
	}).(schema.SingleNestedAttribute)
	a.MarkdownDescription = "How long each operation that can wait may take, as durations (`\"90s\"`, `\"10m\"`). An " +
		"operation still waiting then fails and says what it waited for; the master's safety is kept (a destroy cut " +
		"short keeps the master in state as `destroying`, and the next apply finishes it)."
	return a
}
