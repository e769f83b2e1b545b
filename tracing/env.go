package tracing

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// samplers are the OTEL_TRACES_SAMPLER values the SDK knows; it takes an
// unknown one for the default, which would send every trace a user meant
// to thin out (always_of for always_off).
var samplers = []string{"always_on", "always_off", "traceidratio", "parentbased_always_on",
	"parentbased_always_off", "parentbased_traceidratio"}

// checkEnv refuses the OpenTelemetry variables the SDK would misread in
// silence: an unknown sampler, a ratio that is not a number from 0 to 1,
// and an OTLP protocol other than http/protobuf (gRPC is not built in,
// and http/protobuf sent to a gRPC port is lost). The SDK reads the
// process's environment, so this does too.
func checkEnv() error {
	s, ok := os.LookupEnv("OTEL_TRACES_SAMPLER")
	s = strings.TrimSpace(s)
	if ok && s != "" && !slices.Contains(samplers, s) {
		return fmt.Errorf("OTEL_TRACES_SAMPLER=%q is not a sampler: use one of %s", s, strings.Join(samplers, ", "))
	}
	if arg := strings.TrimSpace(os.Getenv("OTEL_TRACES_SAMPLER_ARG")); arg != "" && strings.HasSuffix(s, "traceidratio") {
		if r, err := strconv.ParseFloat(arg, 64); err != nil || r < 0 || r > 1 {
			return fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q is not a ratio from 0 to 1 (the share of traces %s keeps)", arg, s)
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := strings.TrimSpace(os.Getenv(name)); p != "" && p != "http/protobuf" {
			return fmt.Errorf("%s=%q: hookd sends OTLP over http/protobuf only (gRPC is not built in); unset it or set http/protobuf, "+
				"and point the endpoint at the collector's OTLP/HTTP port (4318 by default)", name, p)
		}
	}
	return nil
}
