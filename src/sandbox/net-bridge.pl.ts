/**
 * The network bridge of a sandbox under `allowlist` (Perl 5, no module but strict), run as the
 * sandbox's pid 1 (bubblewrap `--as-pid-1`):
 *   `perl -e <this> <proxy socket> <port> <SOCK_STREAM> <O_NONBLOCK> -- <command...>`
 *
 * The sandbox has a network namespace of its own (loopback only). The bridge listens on
 * 127.0.0.1:<port> there, starts the command (the shell host or `<shell> -c <command>`), and relays
 * every connection to dsh's filtering proxy through the Unix socket bound into the sandbox
 * (`./proxy.ts` decides). The command's proxy variables point at that port (`networkEnvironment`).
 *
 * Pid 1 because the shell host ends every other process of its sandbox between commands
 * (`kill -1`), which spares only pid 1; and because pid 1 ending ends the sandbox, as bubblewrap's
 * own pid 1 does. It exits with the command's status (128 + N when a signal N ended it: pid 1
 * cannot be ended by a signal of its own). A relay is a forked child per connection, so a slow
 * peer holds up nothing else. No module: Socket would add ~20 ms to each start, so the numbers are
 * spelled here (AF_INET 2, AF_UNIX 1, WNOHANG 1, F_GETFL 3, F_SETFL 4; SOCK_STREAM and O_NONBLOCK
 * differ between architectures and come from dsh).
 */
export const NET_BRIDGE_PROGRAM = String.raw`
use strict;
sub WNOHANG () { 1 }
my ($path, $port, $stream, $o_nonblock) = splice(@ARGV, 0, 4);
shift @ARGV if @ARGV && $ARGV[0] eq '--';
my @command = @ARGV;
$SIG{PIPE} = 'IGNORE';
sub fail { print STDERR "dsh network bridge: $_[0]\n"; exit(125) }
socket(my $listener, 2, $stream, 0) or fail("socket: $!");
bind($listener, pack('S n C4 x8', 2, $port, 127, 0, 0, 1)) or fail("cannot listen on 127.0.0.1:$port: $!");
listen($listener, 128) or fail("listen: $!");
pipe(my $wake_r, my $wake_w) or fail("pipe: $!");
fcntl($_, 4, fcntl($_, 3, 0) | $o_nonblock) for $wake_r, $wake_w;
$SIG{CHLD} = sub { syswrite($wake_w, 'x') };
my $main = fork;
fail("fork: $!") unless defined $main;
if ($main == 0) {
  $SIG{CHLD} = 'DEFAULT'; $SIG{PIPE} = 'DEFAULT';
  close $listener; close $wake_r; close $wake_w;
  { exec { $command[0] } @command }
  print STDERR "dsh: cannot run $command[0]: $!\n";
  exit(127);
}
# The command's pipes are its own: the bridge keeps none of them open.
open(STDIN, '<', '/dev/null'); open(STDOUT, '>', '/dev/null');

sub relay {
  my ($client) = @_;
  socket(my $up, 1, $stream, 0) or exit(1);
  connect($up, pack('S', 1) . $path . "\0") or exit(1);
  my %other = (fileno($client) => $up, fileno($up) => $client);
  my %open = (fileno($client) => $client, fileno($up) => $up);
  while (%open) {
    my $want = '';
    vec($want, $_, 1) = 1 for keys %open;
    my $ready = select(my $got = $want, undef, undef, undef);
    if ($ready < 0) { next if $!{EINTR}; exit(1) }
    for my $fd (keys %open) {
      next unless vec($got, $fd, 1);
      my $n = sysread($open{$fd}, my $bytes, 65536);
      next if !defined $n && $!{EINTR};
      if (!$n) { shutdown($other{$fd}, 1); delete $open{$fd}; next }
      my $at = 0;
      while ($at < $n) {
        my $w = syswrite($other{$fd}, $bytes, $n - $at, $at);
        if (!defined $w) { next if $!{EINTR}; exit(0) }
        $at += $w;
      }
    }
  }
  exit(0);
}

while (1) {
  my $want = '';
  vec($want, fileno($listener), 1) = 1;
  vec($want, fileno($wake_r), 1) = 1;
  my $ready = select(my $got = $want, undef, undef, undef);
  if ($ready < 0) { next if $!{EINTR}; fail("select: $!") }
  if (vec($got, fileno($wake_r), 1)) {
    sysread($wake_r, my $drop, 4096);
    # Pid 1 reaps every orphan of the sandbox, and ends with the command.
    while ((my $pid = waitpid(-1, WNOHANG)) > 0) {
      next unless $pid == $main;
      my $status = $?;
      exit(($status & 127) ? 128 + ($status & 127) : $status >> 8);
    }
  }
  next unless vec($got, fileno($listener), 1);
  accept(my $client, $listener) or next;
  my $pid = fork;
  if (defined $pid && $pid == 0) {
    $SIG{CHLD} = 'DEFAULT';
    close $listener; close $wake_r; close $wake_w;
    open(STDERR, '>', '/dev/null');
    relay($client);
  }
  close $client;
}
`
