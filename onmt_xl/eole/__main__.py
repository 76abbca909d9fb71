"""``python -m onmt_xl.eole train|predict|serve ...``: Eole's ``eole`` command with the Eole adapter's seams installed
first (until a start-up hook installs them in every process)."""

from onmt_xl.eole.hook import install

install()

from eole.bin.main import main  # noqa: E402

main()
