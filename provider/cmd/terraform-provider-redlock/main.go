// Command terraform-provider-redlock serves the redlock Terraform provider. Started as
// `terraform-provider-redlock supervise <data dir>` it is instead the supervisor of one
// master: the provider re-executes itself so that nothing else needs to be on PATH.
package main

import (
	"context"
	"flag"
	"log"
	"os"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/redlock-kit/redlock-kit/provider"
	"github.com/redlock-kit/redlock-kit/provider/supervisor"
)

// version is set by the build: -ldflags "-X main.version=0.1.0".
var version = "0.1.0"

func main() {
	if len(os.Args) > 2 && os.Args[1] == "supervise" {
		os.Exit(supervisor.Main(os.Args[2]))
	}
	debug := flag.Bool("debug", false, "run with support for debuggers like delve")
	flag.Parse()
	err := providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address: "registry.terraform.io/redlock-kit/redlock",
		Debug:   *debug,
	})
	if err != nil {
		log.Fatal(err)
	}
}
