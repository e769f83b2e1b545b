package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hookd/hookd/budget"
)

func TestLoadDaemonBudget(t *testing.T) {
	t.Parallel()
	src := `budget:
  per_hour: 200000
  per_day: 1000000
  prices:
    gpt-4o: {input: 2.5, output: 10}
    llama3: {input: 0, output: 0}
`
	d, err := LoadDaemon(strings.NewReader(src), "hookd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := budget.Daemon{PerHour: 200000, PerDay: 1000000, File: "hookd.yaml",
		Prices: map[string]budget.Price{"gpt-4o": {Input: 2.5, Output: 10}, "llama3": {}}}
	if !reflect.DeepEqual(d.Budget, want) {
		t.Errorf("budget %+v, want %+v", d.Budget, want)
	}
	d, err = LoadDaemon(strings.NewReader("max_concurrent: 2\n"), "hookd.yaml")
	if err != nil || !reflect.DeepEqual(d.Budget, budget.Daemon{}) {
		t.Errorf("no budget: %+v %v", d.Budget, err)
	}
}

func TestLoadDaemonBudgetErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ src, want string }{
		{"budget: {per_hour: -1, per_day: -2}\n", `hookd.yaml:1: budget.per_hour: must be >= 0 (got -1)
hookd.yaml:1: budget.per_day: must be >= 0 (got -2)`},
		{"budget:\n  per_hour: 5000\n  per_day: 4000\n",
			"hookd.yaml:2: budget.per_hour: must be <= budget.per_day (4000): an hour's cap above the day's never applies (got 5000)"},
		{"budget:\n  per_dya: 10\n", "hookd.yaml:2: budget.per_dya: unknown field; did you mean per_day?"},
		{"budget: 1000\n", "hookd.yaml:1: budget: expected a mapping, got integer 1000"},
		{"budget:\n  per_day: lots\n", `hookd.yaml:2: budget.per_day: expected an integer, got string "lots"`},
		{`budget:
  prices:
    gpt-4o: {input: -2.5, output: 10}
    mini: {input: 1}
    big: {input: 1, output: ten}
    odd: {input: 1, output: 2, cached: 1}
    flat: 3
`, `hookd.yaml:3: budget.prices.gpt-4o.input: must be >= 0 (got -2.5)
hookd.yaml:4: budget.prices.mini: needs output: the price of 1,000,000 completion tokens
hookd.yaml:5: budget.prices.big.output: expected a number, got string "ten"
hookd.yaml:6: budget.prices.odd.cached: unknown field (known: input, output)
hookd.yaml:7: budget.prices.flat: expected a mapping {input: PRICE, output: PRICE}, got integer 3`},
		{"budget: {prices: [gpt-4o]}\n", "hookd.yaml:1: budget.prices: expected a mapping of model: {input: PRICE, output: PRICE}, got a list"},
	} {
		_, err := LoadDaemon(strings.NewReader(tc.src), "hookd.yaml")
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s\ngot\n%v\nwant\n%s", tc.src, err, tc.want)
		}
	}
}
