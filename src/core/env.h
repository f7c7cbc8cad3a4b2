// Env: what the parts of a process share (DESIGN §33), made once by what
// runs them — main() for a command or a host, a test for itself — and
// handed down by reference: no part reaches for a process-wide object of
// its own, and a test passes a fake (a poll watcher, a clock it moves).
//
//   clock    how waits happen (core/clock.h)
//   watcher  file changes as wake-ups (store/watcher.h): a store's
//            subscriptions, and the shortcut by which a change this
//            process made wakes its own waiters without the kernel
//   folders  the one board and claim line of each task folder the
//            process works on (store/task_folders.h)
//   files    the thread that writes the process's status files, a burst
//            at a time (store/settled_writer.h: the agents' activity)
//   prices   what a model's tokens cost (agent/prices.h): the built-in
//            table with the person's `--prices` over it, loaded once
//
// Two objects stay the kernel's per process and are not in an Env: file
// locks (an fcntl lock belongs to the process, so two holders in one
// process must share one descriptor: core/file_lock.h) and the children
// to end with the process (core/process_tree.h). Nor are caches of answers
// that are the same whoever asks (git/git.cc: a repository's config scan,
// kept while its files' stamps hold; the branch names git accepted; the
// folders libgit2 refused), or the pauses between tries of another
// process (a git lock, a tmux pane, an exit), which take the real clock:
// nothing there to fake.
#pragma once

namespace mates {

class Clock;
class Watcher;
class TaskFolders;
class SettledWriter;
namespace agent {
class PriceTable;
}

struct Env {
  Clock& clock;
  Watcher& watcher;
  TaskFolders& folders;
  SettledWriter& files;
  const agent::PriceTable& prices;
};

}  // namespace mates
