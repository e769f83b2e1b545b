// Command otelcol is an OpenTelemetry Collector built from the
// collector's own modules — the OTLP receiver and the file exporter, one
// release line (v0.161.0, the newest the file exporter is served at
// here) — for hookd's trace tests: they send traces to it over OTLP/HTTP
// and read what it wrote. A module of its own, so that hookd's go.mod does
// not carry the collector; .ci/run builds it once and names it in
// HOOKD_OTELCOL (internal/testtool.Otelcol builds it when that is unset).
package main

import (
	"log"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func main() {
	info := component.BuildInfo{Command: "otelcol-hookd", Description: "collector for hookd's tests", Version: "test"}
	set := otelcol.CollectorSettings{
		BuildInfo: info,
		Factories: func() (otelcol.Factories, error) {
			var f otelcol.Factories
			var err error
			if f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory()); err != nil {
				return f, err
			}
			if f.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](fileexporter.NewFactory()); err != nil {
				return f, err
			}
			f.Telemetry = otelconftelemetry.NewFactory()
			return f, nil
		},
		ConfigProviderSettings: otelcol.ConfigProviderSettings{ResolverSettings: confmap.ResolverSettings{
			ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory()},
			DefaultScheme:     "file",
		}},
	}
	if err := otelcol.NewCommand(set).Execute(); err != nil {
		log.Fatal(err)
	}
}
