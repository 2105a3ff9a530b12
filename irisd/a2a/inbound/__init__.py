"""Every team an A2A agent (inbound): ``mapping`` says what Iris things are in A2A (pure),
``service`` serves the methods through the dispatcher; irisd/http/a2a.py is the HTTP part."""
