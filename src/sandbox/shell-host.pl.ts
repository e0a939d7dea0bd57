/**
 * The shell host's program (Perl 5, no module but strict), run as
 * `perl -e <this> <shell> <real-tmp> <O_NONBLOCK> <dsh's pid namespace>`
 * inside the sandbox (`./shell-host.ts`). Perl because it starts in a few milliseconds, is part of
 * every Debian and Ubuntu base system, and can fork, set process groups, multiplex pipes and read
 * wait statuses; a Node host would take ~75 ms to start, and bash cannot frame binary output.
 *
 * Requests on stdin:
 *   `E <env bytes>\n<env: NUL-separated K=V>`: the environment of the runs that follow;
 *   `R <id> <cwd bytes> <command bytes>\n<cwd><command>`: run `<shell> -c <command>` in cwd;
 *   `K <id> <signal number>\n`: signal the run's process group (ignored once its shell exited).
 * Frames on stdout: `<id> <kind> <length>\n<bytes>`, kinds:
 *   `r` ready (id 0, once), `w` the run got the warm shell (below), `o` stdout bytes, `e` stderr bytes, `s` the run could not start
 *   (message), `x` the shell ended (`exit N` or `signal N`), `c` both pipes closed. What the
 *   shell wrote before it ended comes before its `x`.
 *
 * A run's shell gets its own process group, stdin from /dev/null, the request's cwd and
 * environment, and default signal dispositions.
 *
 * A warm shell: once no run is left, the host starts the next run's shell ahead, with the last
 * run's cwd and the current environment, waiting for its command on stdin (most of a short
 * command's life is the shell's fork, exec and start-up; this moves them off the next command's
 * path, while dsh is busy with the step). A run whose cwd (the same path and the same directory)
 * and environment match gets that shell: the command is written to its stdin, which is closed,
 * and the shell reads it to the end in one go, puts stdin back on /dev/null, sets `$_` and
 * SECONDS back to what a fresh `-c` shell has and `eval`s the command. Anything else (another cwd or
 * environment, a command over 64 KB, a warm shell that has ended) kills the warm shell and forks
 * one as before. The warm shell is started only after the idle clean-up below, so it never sees
 * what an earlier command left. When its shell ends, the rest of its group is
 * killed; when no run is left, so is every other process in the sandbox (orphans that left the
 * group, say with setsid) and the sandbox's private /tmp is emptied: each command starts as it
 * would in a sandbox of its own. `real-tmp` is the device number of the real /tmp (empty: /tmp is
 * not private, never empty it); a /tmp on that device is the real one, and is left alone. stdin closing (dsh ended) ends the host,
 * and with it (bwrap's pid namespace) everything it started.
 */
export const SHELL_HOST_PROGRAM = String.raw`
# No module beyond strict: warnings, Fcntl and constant would add ~8 ms to the host's ~6 ms start.
# So the numbers they would give are spelled here: WNOHANG and F_GETFL/F_SETFL are the same on
# every Linux; O_NONBLOCK differs between architectures and comes from dsh (Node's constant).
use strict;
sub WNOHANG () { 1 }
my ($shell, $real_tmp, $o_nonblock, $outer_pid_ns) = @ARGV;
sub nonblocking { fcntl($_[0], 4, fcntl($_[0], 3, 0) | $o_nonblock) }
# kill(-1) below must reach the sandbox only: a host that shares dsh's pid namespace (a runner
# that claims to isolate and does not) refuses to start, and dsh runs a sandbox per command.
my $pid_ns = readlink '/proc/self/ns/pid';
if (!defined $pid_ns || !length $outer_pid_ns || $pid_ns eq $outer_pid_ns) { print STDERR "dsh shell host: not in a pid namespace of its own\n"; exit(3) }
$SIG{PIPE} = 'IGNORE';
binmode STDIN; binmode STDOUT;
pipe(my $wake_r, my $wake_w) or die "pipe: $!";
nonblocking($_) for $wake_r, $wake_w;
$SIG{CHLD} = sub { syswrite($wake_w, 'x') };
my (%runs, %by_fd, %by_pid);
my $input = '';
my $live = 0;
my %run_env;
# Bumped by every environment request: a warm shell started under another one is not used.
my $env_gen = 0;
# The warm shell (pid, its stdin, its output pipes, cwd, environment generation, directory) and the
# cwd to start the next one in once the host is idle.
my $warm;
my $warm_cwd;
sub WARM_MAX () { 65536 }
# read -N reads a pipe in blocks (read -d '' would read it a byte at a time); it ends at EOF.
# $_ starts as a fresh shell's (the environment's _, else the shell's name) and is set back to it.
# (A dollar sign and a brace are joined with . here: this program is a JavaScript template.)
my $warm_boot = '__dsh_command=("$_"); IFS= read -r -N 2147483647 "__dsh_command[1]"; exec </dev/null; SECONDS=0; '
  . ': "$' . '{__dsh_command[0]}"; eval "$' . '{__dsh_command[1]}"';

sub put {
  my $frame = "$_[0] $_[1] " . length($_[2]) . "\n" . $_[2];
  while (length $frame) {
    my $n = syswrite(STDOUT, $frame);
    if (!defined $n) { next if $!{EINTR}; exit(0) }
    substr($frame, 0, $n) = '';
  }
}

# Empties a folder of the sandbox's own /tmp: symlinks are removed, never followed, and nothing
# on another file system is touched (a mount point, such as the writable root's when it lies
# under /tmp, keeps all it holds).
sub clear_dir {
  my ($dir, $device) = @_;
  opendir(my $dh, $dir) or return;
  my @names = grep { $_ ne '.' && $_ ne '..' } readdir $dh;
  closedir $dh;
  for my $name (@names) {
    my $path = "$dir/$name";
    my @info = lstat $path or next;
    next if $info[0] != $device;
    if (-d _) { clear_dir($path, $device); rmdir $path } else { unlink $path }
  }
}

sub closed {
  my ($id) = @_;
  my $run = $runs{$id};
  return unless $run->{open} == 0 && $run->{exited};
  put($id, 'c', '');
  delete $runs{$id};
}

# Forks a shell in cwd with the current environment, in its own process group, stdin from
# $stdin (a pipe's read end, or /dev/null when undef), running -c $script. Returns the pid and
# the read ends of its output pipes, or an error message.
sub spawn_shell {
  my ($cwd, $stdin, $script) = @_;
  return (undef, "cannot enter $cwd: $!") unless chdir $cwd;
  my ($out_r, $out_w, $err_r, $err_w);
  if (!pipe($out_r, $out_w) || !pipe($err_r, $err_w)) { chdir '/'; return (undef, "pipe: $!") }
  my $pid = fork;
  if (!defined $pid) { chdir '/'; return (undef, "fork: $!") }
  if ($pid == 0) {
    setpgrp(0, 0);
    $SIG{PIPE} = 'DEFAULT'; $SIG{CHLD} = 'DEFAULT';
    if (defined $stdin) { open(STDIN, '<&', $stdin) } else { open(STDIN, '<', '/dev/null') }
    open(STDOUT, '>&', $out_w);
    open(STDERR, '>&', $err_w);
    %ENV = %run_env;
    { exec { $shell } $shell, '-c', $script }
    print STDERR "dsh: cannot run $shell: $!\n";
    exit(127);
  }
  setpgrp($pid, $pid);
  chdir '/';
  close $out_w; close $err_w;
  # Non-blocking, so a run's pipes can be emptied at its end without waiting on a writer.
  nonblocking($_) for $out_r, $err_r;
  return ($pid, $out_r, $err_r);
}

sub drop_warm {
  return unless $warm;
  kill 'KILL', -$warm->{pid};
  close $_ for @{$warm}{qw(in out err)};
  undef $warm;
}

sub warm_up {
  my ($cwd) = @_;
  my @dir = stat $cwd or return;
  pipe(my $in_r, my $in_w) or return;
  my ($pid, $out_r, $err_r) = spawn_shell($cwd, $in_r, $warm_boot);
  close $in_r;
  return unless defined $pid;
  $warm = { pid => $pid, in => $in_w, out => $out_r, err => $err_r, cwd => $cwd, gen => $env_gen, dev => $dir[0], ino => $dir[1] };
}

# Hands the command to the warm shell when it suits the run; returns its pid and pipes, or nothing.
sub take_warm {
  my ($cwd, $command) = @_;
  return () unless $warm;
  my $w = $warm;
  my @dir = stat $cwd;
  if ($w->{gen} != $env_gen || $w->{cwd} ne $cwd || !@dir || $dir[0] != $w->{dev} || $dir[1] != $w->{ino} || length($command) > WARM_MAX) { drop_warm(); return () }
  undef $warm;
  # At most a pipe-full into an empty pipe: the write does not wait.
  my $at = 0;
  while ($at < length $command) {
    my $n = syswrite($w->{in}, $command, length($command) - $at, $at);
    if (!defined $n) { next if $!{EINTR}; $warm = $w; drop_warm(); return () }
    $at += $n;
  }
  close $w->{in};
  return ($w->{pid}, $w->{out}, $w->{err});
}

sub start {
  my ($id, $cwd, $command) = @_;
  my ($pid, $out_r, $err_r) = take_warm($cwd, $command);
  if (defined $pid) { put($id, 'w', '') } else { ($pid, $out_r, $err_r) = spawn_shell($cwd, undef, $command) }
  if (!defined $pid) { put($id, 's', $out_r); return }
  $warm_cwd = $cwd;
  $runs{$id} = { pid => $pid, open => 2, exited => 0 };
  $by_pid{$pid} = $id;
  $by_fd{fileno $out_r} = [$id, 'o', $out_r];
  $by_fd{fileno $err_r} = [$id, 'e', $err_r];
  $live++;
}

# Reads what one pipe holds now and relays it. Returns the bytes read; 0 once the pipe has ended
# (it is closed and forgotten); undef when it holds nothing yet.
sub relay {
  my ($fd) = @_;
  my ($id, $kind, $fh) = @{$by_fd{$fd}};
  my ($n, $bytes);
  do { $n = sysread($fh, $bytes, 65536) } while (!defined $n && $!{EINTR});
  return undef if !defined $n && $!{EAGAIN};
  if ($n) { put($id, $kind, $bytes); return $n }
  close $fh;
  delete $by_fd{$fd};
  $runs{$id}{open}--;
  return 0;
}

# Relays what is in a run's pipes now, up to DRAIN_MAX bytes (a writer outside its group that
# keeps writing is not waited for): output the shell wrote before it ended then goes out before
# its end does. dsh stops reading a run some time after its end once its output is quiet (for
# background jobs that hold the pipes); output still queued here must not count as quiet.
sub DRAIN_MAX () { 4194304 }
sub drain {
  my ($id) = @_;
  my $budget = DRAIN_MAX;
  for my $fd (grep { $by_fd{$_}[0] == $id } keys %by_fd) {
    while ($budget > 0) {
      my $n = relay($fd);
      last unless $n;
      $budget -= $n;
    }
  }
}

sub reap {
  while ((my $pid = waitpid(-1, WNOHANG)) > 0) {
    my $id = delete $by_pid{$pid};
    if ($warm && $warm->{pid} == $pid) { drop_warm(); next }
    next unless defined $id;
    my $status = $?;
    kill 'KILL', -$pid;
    drain($id);
    put($id, 'x', ($status & 127) ? 'signal ' . ($status & 127) : 'exit ' . ($status >> 8));
    $live--;
    if ($live == 0) {
      kill 'KILL', -1;
      if (length $real_tmp) { my @tmp = lstat '/tmp'; clear_dir('/tmp', $tmp[0]) if @tmp && -d _ && $tmp[0] != $real_tmp }
    }
    $runs{$id}{exited} = 1;
    closed($id);
  }
}

put(0, 'r', '');
while (1) {
  if (defined $warm_cwd && !%runs) { warm_up($warm_cwd); undef $warm_cwd }
  my $want = '';
  vec($want, fileno(STDIN), 1) = 1;
  vec($want, fileno($wake_r), 1) = 1;
  vec($want, $_, 1) = 1 for keys %by_fd;
  my $ready = select(my $got = $want, undef, undef, undef);
  if ($ready < 0) { next if $!{EINTR}; die "select: $!" }
  sysread($wake_r, my $drop, 4096) if vec($got, fileno($wake_r), 1);
  reap();
  for my $fd (keys %by_fd) {
    # A pipe reap() already emptied and closed, or emptied for now.
    next unless vec($got, $fd, 1) && $by_fd{$fd};
    my $id = $by_fd{$fd}[0];
    my $n = relay($fd);
    closed($id) if defined $n && $n == 0;
  }
  next unless vec($got, fileno(STDIN), 1);
  my $n = sysread(STDIN, $input, 65536, length $input);
  next if !defined $n && $!{EINTR};
  exit(0) unless $n;
  while (1) {
    if ($input =~ /\AK (\d+) (\d+)\n/) {
      my ($id, $signal) = ($1, $2);
      substr($input, 0, length $&) = '';
      kill $signal, -$runs{$id}{pid} if $runs{$id} && !$runs{$id}{exited};
      next;
    }
    if ($input =~ /\AE (\d+)\n/) {
      my ($head, $env_len) = (length $&, $1);
      last if length($input) < $head + $env_len;
      %run_env = ();
      $env_gen++;
      for my $pair (split /\0/, substr($input, $head, $env_len)) { my ($k, $v) = split /=/, $pair, 2; $run_env{$k} = $v if defined $v }
      substr($input, 0, $head + $env_len) = '';
      next;
    }
    if ($input !~ /\AR (\d+) (\d+) (\d+)\n/) {
      # Half a line is waited for; a whole line that is no request is a broken host: stop.
      exit(2) if index($input, "\n") >= 0;
      last;
    }
    my ($id, $cwd_len, $command_len) = ($1, $2, $3);
    my $head = length $&;
    last if length($input) < $head + $cwd_len + $command_len;
    my $cwd = substr($input, $head, $cwd_len);
    my $command = substr($input, $head + $cwd_len, $command_len);
    substr($input, 0, $head + $cwd_len + $command_len) = '';
    start($id, $cwd, $command);
  }
}
`
