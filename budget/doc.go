// Package budget keeps the token budgets of hooks and of the daemon:
// what each run's model stage spent (Usage), the ledger of the last day
// (Ledger), the one decision whether a budget is spent (Ledger.Check),
// and the spend report that status, the API, the dashboard and metrics
// show (Spend).
//
// It knows nothing of hooks or runs beyond their names: the engine's
// loop owns a Ledger, loads it from the store, adds each finished run's
// usage, asks it before a run starts and turns a Refusal into its budget
// gate.
package budget
