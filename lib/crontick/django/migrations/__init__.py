"""Django migrations of crontick.django: `manage.py migrate` installs crontick's schema (into test databases too)."""
