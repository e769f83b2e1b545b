// Package benchhooks writes the hooks.d of the loading benchmarks (issue
// 15, part 3) and the crontab of the same jobs that supercronic's parse
// is measured on, so that the bench module's BenchmarkLoadHookFiles and
// BenchmarkValidateCommand load the same files and compare against the
// same crontab, and config's parser tests and benchmarks parse them too.
// Only tests import it.
package benchhooks

import (
	"fmt"
	"os"
	"path/filepath"
)

// HookFile returns the i-th hook file, in one of four shapes like the
// examples in hooks.d: an interval, a cron schedule, an event with a
// payload filter, and an event from another hook. Each has a trigger, a
// shell step with placeholders, an argv step, and a prompt that names a
// step.
func HookFile(i int) []byte {
	var trigger string
	switch i % 4 {
	case 0:
		trigger = fmt.Sprintf("  every: %dm\n  jitter: 30s\n", 5+i%55)
	case 1:
		trigger = fmt.Sprintf("  cron: \"%d */%d * * *\"\n  timezone: Europe/Berlin\n  on_missed: skip\n", i%60, 1+i%6)
	case 2:
		trigger = fmt.Sprintf("  event: deploy.svc%d.*\n  where: {env: prod, region: [eu, us]}\n", i%100)
	default:
		trigger = "  event: hook.run.failed\n"
	}
	return fmt.Appendf(nil, `# Hook %[1]d: gather the state of service %[2]d and let the model judge it.
description: Check service %[2]d and report what changed
trigger:
%[3]scooldown: 1m
overlap: queue
timeout: 5m
env: {SERVICE: svc%[2]d, PORT: %[4]d}
secrets: [GITHUB_TOKEN]
steps:
  - name: gather
    type: shell
    command: |
      printf 'service %%s (%%s) at %%s\n' svc%[2]d {{event.env}} {{now}}
      systemctl status "svc%[2]d" 2>&1 | head -n 20
    timeout: 30s
    secrets: [GITHUB_TOKEN]
    skip_llm_if_exit_zero: true
  - name: logs
    type: shell
    command: [journalctl, -u, "svc%[2]d", -n, "50", --since, "{{last_run_time}}"]
    skip_llm_if_unchanged: true
system: You are the on-call engineer for svc%[2]d.
prompt: |
  Service svc%[2]d ({{hook}}, run {{run}}) reported:
  {{steps.gather.output}}
  Recent logs:
  {{step_1}}
  Say whether anything needs attention, and what.
llm:
  model: gpt-4o-mini
  max_rounds: 4
budget: {max_tokens_per_run: 20000}
tools: [read_file, list_files]
`, i, i%100, trigger, 8000+i%1000)
}

// Crontab returns a crontab of n jobs like the hooks of HookFile: a
// comment and a cron line a job, and the environment lines supercronic
// reads once.
func Crontab(n int) []byte {
	out := []byte("SHELL=/bin/sh\nCRON_TZ=Europe/Berlin\n")
	for i := range n {
		out = fmt.Appendf(out, "# job %[1]d: check service %[2]d\n%[3]d */%[4]d * * * systemctl status svc%[2]d 2>&1 | head -n 20\n",
			i, i%100, i%60, 1+i%6)
	}
	return out
}

// WriteDir makes the directory dir (its parent must exist) and writes n
// hook files into it, hook-00000.yaml to hook-<n-1>.yaml, from HookFile.
func WriteDir(dir string, n int) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("make hooks directory: %w", err)
	}
	for i := range n {
		name := filepath.Join(dir, fmt.Sprintf("hook-%05d.yaml", i))
		if err := os.WriteFile(name, HookFile(i), 0o644); err != nil {
			return fmt.Errorf("write hook file: %w", err)
		}
	}
	return nil
}

// WriteCrontab writes Crontab(n) to the file name.
func WriteCrontab(name string, n int) error {
	if err := os.WriteFile(name, Crontab(n), 0o644); err != nil {
		return fmt.Errorf("write crontab: %w", err)
	}
	return nil
}
