"""Commands confined by the operating system: bubblewrap or Landlock on Linux, Seatbelt on
macOS. A confined command writes only inside the session's directories (never its uncommitted
work or `.git`), reads no secret, runs no denylisted program and opens no network connection
unless the session allows it."""
