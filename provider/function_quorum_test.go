package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
)

func TestQuorum(t *testing.T) {
	for n, want := range map[int64]int64{1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 7: 4} {
		if got := Quorum(n); got != want {
			t.Errorf("Quorum(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestAccQuorumFunction(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		n       int
		want    string
		wantErr *regexp.Regexp
	}{
		{name: "five masters need three", n: 5, want: "3"},
		{name: "three masters need two", n: 3, want: "2"},
		{name: "zero masters is an error", n: 0, wantErr: regexp.MustCompile(`at least 1 master`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			step := resource.TestStep{
				Config: fmt.Sprintf(`output "quorum" { value = provider::redlock::quorum(%d) }`, tc.n),
			}
			if tc.wantErr != nil {
				step.ExpectError = tc.wantErr
			} else {
				step.Check = resource.TestCheckOutput("quorum", tc.want)
			}
			resource.Test(t, resource.TestCase{
				TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
				ProtoV6ProviderFactories: testAccProviderFactories,
				Steps:                    []resource.TestStep{step},
			})
		})
	}
}
