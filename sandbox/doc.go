// Package sandbox contains the processes hookd starts for a hook: a
// shell step, run_tests, the git steps, the model's run_command, a
// command handler, an MCP stdio server. Whatever code such a process
// ends up running, it reaches only what its Policy declares:
//
//   - files: it reads the file system, less hookd's own files (hidden by
//     a mount namespace where one can be had — one per Policy.Key, made
//     once and entered by each process, see mountView — kept out of the
//     Landlock grants otherwise), and writes only its workdir, the trees declared
//     writable, a private TMPDIR and the hook's cache directory
//     (Landlock);
//   - network: none unless declared (a network namespace with only a
//     loopback, or a seccomp filter that refuses every socket but
//     AF_UNIX); a list of TCP ports (Landlock, with MPTCP refused by
//     seccomp); or all;
//   - its process tree: a cgroup of its own, so that nothing it starts,
//     setsid'd or double-forked, outlives it (cgroup.kill), and limits
//     on memory, processes and CPU;
//   - no_new_privs, no signals to processes outside its tree, no abstract
//     unix sockets outside it, and no descriptors of hookd's beyond
//     stdio.
//
// The restrictions are applied to one locked OS thread of hookd's,
// which then starts the process (os/exec forks from the calling thread,
// and the child inherits the thread's Landlock domain, seccomp filter,
// namespaces and no_new_privs). The thread is never unlocked, so it ends
// with its goroutine. This costs no re-executed launcher.
//
// On other systems, and with Options.Off, processes start unconfined,
// and Status says so.
package sandbox
