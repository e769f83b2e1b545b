// Package process runs the commands a hook starts — shell steps, the
// model's run_command, lifecycle handlers' commands — one way:
// Command.Run starts each in the hook's sandbox (package sandbox) as
// the leader of its own process group, streams its output through the
// run's redactor to a cap, records the group in the process journal
// while it runs, and kills whatever it leaves behind; ReapGroup ends a
// group a crashed hookd left, after checking it is still the one that
// was recorded.
package process
