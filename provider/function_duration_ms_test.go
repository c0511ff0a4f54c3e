package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
)

func TestAccDurationMSFunction(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		in      string
		want    string
		wantErr *regexp.Regexp
	}{
		{name: "seconds", in: "30s", want: "30000"},
		{name: "minutes and seconds", in: "1m30s", want: "90000"},
		{name: "one minute written two ways", in: "60s", want: "60000"},
		{name: "milliseconds", in: "1500ms", want: "1500"},
		{name: "fraction", in: "1.5h", want: "5400000"},
		{name: "below a millisecond is dropped", in: "1500us", want: "1"},
		{name: "not a duration", in: "30 seconds", wantErr: regexp.MustCompile(`(?i)duration`)},
		{name: "no unit", in: "30", wantErr: regexp.MustCompile(`missing unit`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			step := resource.TestStep{
				Config: fmt.Sprintf(`output "ms" { value = provider::redlock::duration_ms(%q) }`, tc.in),
			}
			if tc.wantErr != nil {
				step.ExpectError = tc.wantErr
			} else {
				step.Check = resource.TestCheckOutput("ms", tc.want)
			}
			resource.Test(t, resource.TestCase{
				TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
				ProtoV6ProviderFactories: testAccProviderFactories,
				Steps:                    []resource.TestStep{step},
			})
		})
	}
}
