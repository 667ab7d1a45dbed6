from flowc.cli import run

run()
