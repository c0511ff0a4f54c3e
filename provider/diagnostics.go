package provider

import (
	"errors"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/redlock-kit/redlock-kit/internal/master"
)

// addErrors turns an error of internal/master into diagnostics: each *master.FieldError
// (errors.Join may hold several) becomes an error on its attribute, anything else a plain
// error.
func addErrors(diags *diag.Diagnostics, err error) {
	if err == nil {
		return
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			addErrors(diags, e)
		}
		return
	}
	var fe *master.FieldError
	if errors.As(err, &fe) {
		diags.AddAttributeError(path.Root(fe.Field), fe.Summary, fe.Detail)
		return
	}
	diags.AddError("redlock_master failed", err.Error())
}
